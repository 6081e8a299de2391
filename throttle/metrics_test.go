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
		Signals: []Signal{{Name: "queue", Interval: time.Hour, Func: func(context.Context) (bool, error) {
			defer close(fires)
			return true, nil
		}}},
	})
	defer th.Close()
	<-fires
	waitFor(t, func() bool { return th.Snapshot().Signals[0].Evaluations == 1 })

	h := blockingApp(th.Handler(), nil, nil).Handler()
	do(h, "/ok")

	// A second instance on the same registry under the same name must not panic; its metrics are skipped.
	second := NewThrottler(Config{Name: "api", Registerer: reg})
	second.Close()

	got := gather(t, reg)
	for name, want := range map[string]float64{
		`fiberguard_throttle_window{throttle="api"}`:                                                   3,
		`fiberguard_throttle_window_bound{bound="max",throttle="api"}`:                                 9,
		`fiberguard_throttle_in_flight{throttle="api"}`:                                                0,
		`fiberguard_throttle_requests_total{decision="admitted",throttle="api"}`:                       1,
		`fiberguard_throttle_requests_total{decision="rejected",throttle="api"}`:                       0,
		`fiberguard_throttle_signal_firing{signal="queue",throttle="api"}`:                             1,
		`fiberguard_throttle_signal_evaluations_total{signal="queue",throttle="api",verdict="firing"}`: 1,
		`fiberguard_throttle_query_errors_total{signal="queue",throttle="api"}`:                        0,
		`fiberguard_throttle_backoffs_total{signal="queue",throttle="api"}`:                            1,
		`fiberguard_throttle_query_duration_seconds_count{signal="queue",throttle="api"}`:              1,
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

// gather flattens a registry into "name{labels}" -> value (histograms as _count).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
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
