package core

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsCountDecisions(t *testing.T) {
	load := coretest.NewFixedLoad(0.96)
	e, reg := newTestEngine(t, testConfig{Signal: load, Interval: time.Hour}) // the test takes the readings itself
	e.Admit(false)                                                            // rejected
	e.Admit(true)                                                             // admitted in the critical band
	load.Set(1)
	e.Sample()
	e.Admit(true) // rejected
	coretest.WantRequests(t, reg, coretest.RequestCounts{Rejected: 1, CriticalAdmitted: 1, CriticalRejected: 1})
}

func TestMetricsCountSamplerErrors(t *testing.T) {
	e, reg := newTestEngine(t, testConfig{Interval: time.Hour, // the test takes the readings itself
		Signal: SignalFunc(func() (float64, error) { return 0, errors.New("gone") })})
	e.Sample()
	e.Sample()
	want := `
# HELP fiberguard_loadshed_sampler_errors_total Load readings that failed; the last good load is kept.
# TYPE fiberguard_loadshed_sampler_errors_total counter
fiberguard_loadshed_sampler_errors_total{name="default"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_sampler_errors_total"); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsDryRun(t *testing.T) {
	e, reg := newTestEngine(t, testConfig{Signal: coretest.NewFixedLoad(1), DryRun: true})
	for range 5 {
		e.Admit(false)
	}
	if v := coretest.Gauge(t, reg, "fiberguard_loadshed_dry_run"); v != 1 {
		t.Fatalf("dry_run gauge = %v", v)
	}
	// The would-be rejections are counted under the same decision as real ones.
	coretest.WantRequests(t, reg, coretest.RequestCounts{Rejected: 5})
}

func TestMetricsAndTwoInstances(t *testing.T) {
	reg := prometheus.NewRegistry()
	engine := func(cfg testConfig, lg Logger) *Engine { return NewEngine(cfg.WithDefaults(testDefaults), lg) }
	a := engine(testConfig{Signal: coretest.NewFixedLoad(0.96), Smoothing: 1, Registerer: reg}, nil)
	defer a.Close()
	// Same name on the same registry: must not panic; the second instance works without metrics, and says so.
	lg := &logRecorder{}
	b := engine(testConfig{Signal: coretest.NewFixedLoad(0.1), Smoothing: 1, Registerer: reg}, lg)
	defer b.Close()
	if b.metrics != nil {
		t.Fatal("duplicate instance registered its metrics")
	}
	if _, warns := lg.lines(); len(warns) != 1 || !strings.Contains(warns[0], `loadshed "default": metrics already registered`) {
		t.Fatalf("duplicate registration logged %q, want one warning naming the instance", warns)
	}
	c := engine(testConfig{Signal: coretest.NewFixedLoad(0.1), Smoothing: 1, Registerer: reg, Name: "api"}, nil)
	want := `
# HELP fiberguard_loadshed_load The load the shedder decides by: it sheds from Lower and every ordinary request at Upper. The default signal reports the share it settled on shedding, placed on that band; other signals are smoothed.
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
	d := engine(testConfig{Signal: coretest.NewFixedLoad(0.1), Registerer: reg, Name: "api"}, nil)
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
	e := NewEngine(testConfig{Signal: coretest.NewFixedLoad(0.5), Name: name}.WithDefaults(testDefaults), nil)
	if !find() {
		_ = e.Close()
		t.Fatal("a nil Registerer did not register on prometheus.DefaultRegisterer")
	}
	_ = e.Close()
	if find() {
		t.Fatal("Close left the metrics on prometheus.DefaultRegisterer")
	}
}
