package throttle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	fires := make(chan struct{})
	th := NewThrottler(Config{
		Name: "api", Registerer: reg, WindowMin: 3, WindowMax: 9,
		Triggers: []Trigger{{Name: "queue", Interval: time.Hour, Func: func(context.Context) (bool, error) {
			defer close(fires)
			return true, nil
		}}},
	})
	defer th.Close()
	<-fires
	waitFor(t, func() bool { return th.Status().Triggers[0].Evaluations == 1 })

	h := blockingApp(th.Handler(), nil, nil).Handler()
	do(h, "/ok")

	// A second instance on the same registry under the same name must not panic; its metrics are skipped.
	second := NewThrottler(Config{Name: "api", Registerer: reg})
	second.Close()

	got := gather(t, reg)
	for name, want := range map[string]float64{
		`fiberguard_throttle_window{name="api"}`:                                                     3,
		`fiberguard_throttle_window_bound{bound="min",name="api"}`:                                   3,
		`fiberguard_throttle_window_bound{bound="max",name="api"}`:                                   9,
		`fiberguard_throttle_in_flight{name="api"}`:                                                  0,
		`fiberguard_throttle_requests_total{decision="admitted",name="api"}`:                         1,
		`fiberguard_throttle_requests_total{decision="rejected",name="api"}`:                         0,
		`fiberguard_throttle_trigger_firing{name="api",trigger="queue"}`:                             1,
		`fiberguard_throttle_trigger_invalid{name="api",trigger="queue"}`:                            0,
		`fiberguard_throttle_trigger_evaluations_total{name="api",trigger="queue",verdict="firing"}`: 1,
		`fiberguard_throttle_trigger_errors_total{name="api",trigger="queue"}`:                       0,
		`fiberguard_throttle_backoffs_total{name="api",trigger="queue"}`:                             1,
		`fiberguard_throttle_trigger_duration_seconds_count{name="api",trigger="queue"}`:             1,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", name, v, ok, want)
		}
	}

	th.Close()
	if n := len(gather(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close unregistered the metrics", n)
	}
}

// TestRegistererNilUsesTheDefaultRegistry: without a Registerer the metrics go to prometheus.DefaultRegisterer,
// and Close takes them away again.
func TestRegistererNilUsesTheDefaultRegistry(t *testing.T) {
	const series = `fiberguard_throttle_window{name="default_registerer_test"}`
	th := NewThrottler(Config{Name: "default_registerer_test", WindowMin: 7})
	if v, ok := gather(t, prometheus.DefaultGatherer)[series]; !ok || v != 7 {
		t.Fatalf("%s = %v (present %t) on the default registry, want 7", series, v, ok)
	}
	th.Close()
	if _, ok := gather(t, prometheus.DefaultGatherer)[series]; ok {
		t.Fatalf("%s still on the default registry after Close", series)
	}
}

// gather flattens a registry into "name{labels}" -> value (histograms as _count).
func gather(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			var v float64
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				name += "_count"
				v = float64(m.GetHistogram().GetSampleCount())
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}
