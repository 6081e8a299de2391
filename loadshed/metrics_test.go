package loadshed

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// requestCounts are the series of fiberguard_loadshed_requests_total of the instance named "default".
type requestCounts struct{ admitted, rejected, criticalAdmitted, criticalRejected int }

func wantRequests(t *testing.T, reg *prometheus.Registry, n requestCounts) {
	t.Helper()
	want := fmt.Sprintf(`
# HELP fiberguard_loadshed_requests_total Requests decided, by priority and decision (rejected decisions in dry-run mode are counted but served).
# TYPE fiberguard_loadshed_requests_total counter
fiberguard_loadshed_requests_total{decision="admitted",name="default",priority="critical"} %d
fiberguard_loadshed_requests_total{decision="admitted",name="default",priority="normal"} %d
fiberguard_loadshed_requests_total{decision="rejected",name="default",priority="critical"} %d
fiberguard_loadshed_requests_total{decision="rejected",name="default",priority="normal"} %d
`, n.criticalAdmitted, n.admitted, n.criticalRejected, n.rejected)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_requests_total"); err != nil {
		t.Fatal(err)
	}
}

// gaugeOf gathers one single-series metric from reg as a collector testutil can read.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("metric %s not found", name)
	return nil
}

func TestMetricsAndTwoInstances(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewShedder(Config{Signal: newFixedLoad(0.96), Smoothing: 1, Registerer: reg})
	defer a.Close()
	// Same name on the same registry: must not panic; the second instance works without metrics.
	b := NewShedder(Config{Signal: newFixedLoad(0.1), Smoothing: 1, Registerer: reg})
	defer b.Close()
	if b.metrics != nil {
		t.Fatal("duplicate instance registered its metrics")
	}
	c := NewShedder(Config{Signal: newFixedLoad(0.1), Smoothing: 1, Registerer: reg, Name: "api"})
	want := `
# HELP fiberguard_loadshed_load Smoothed load, as a fraction of capacity.
# TYPE fiberguard_loadshed_load gauge
fiberguard_loadshed_load{name="api"} 0.1
fiberguard_loadshed_load{name="default"} 0.96
# HELP fiberguard_loadshed_probability Current probability of rejecting a request, by priority.
# TYPE fiberguard_loadshed_probability gauge
fiberguard_loadshed_probability{name="api",priority="critical"} 0
fiberguard_loadshed_probability{name="default",priority="critical"} 0
fiberguard_loadshed_probability{name="api",priority="normal"} 0
fiberguard_loadshed_probability{name="default",priority="normal"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_load", "fiberguard_loadshed_probability"); err != nil {
		t.Fatal(err)
	}
	// Close unregisters, so a new instance can take the name.
	_ = c.Close()
	d := NewShedder(Config{Signal: newFixedLoad(0.1), Registerer: reg, Name: "api"})
	defer d.Close()
	if d.metrics == nil {
		t.Fatal("name not reusable after Close")
	}
}

func TestNilRegistererUsesTheDefault(t *testing.T) {
	const name = "nil-registerer-test"
	find := func() bool {
		mfs, err := prometheus.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "fiberguard_loadshed_load" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" && l.GetValue() == name {
						return true
					}
				}
			}
		}
		return false
	}
	s := NewShedder(Config{Signal: newFixedLoad(0.5), Name: name})
	if !find() {
		_ = s.Close()
		t.Fatal("a nil Registerer did not register on prometheus.DefaultRegisterer")
	}
	_ = s.Close()
	if find() {
		t.Fatal("Close left the metrics on prometheus.DefaultRegisterer")
	}
}
