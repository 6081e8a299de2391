package core

import (
	"context"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	fires := make(chan struct{})
	e := newEngine(Config[any, any]{
		Name: "api", Registerer: reg, WindowMin: 3, WindowMax: 9,
		Triggers: []Trigger{{Name: "queue", Interval: time.Hour, Func: func(context.Context) (bool, error) {
			defer close(fires)
			return true, nil
		}}},
	})
	defer e.Close()
	<-fires
	coretest.WaitFor(t, func() bool { return e.Status().Triggers[0].Evaluations == 1 })

	// Fill the window of 3, turn one request away, complete the three: growth is held while the trigger fires.
	var releases []func()
	for range 3 {
		release, ok := e.TryAcquire()
		if !ok {
			t.Fatal("rejected before the window of 3 was full")
		}
		releases = append(releases, release)
	}
	if _, ok := e.TryAcquire(); ok {
		t.Fatal("admitted into a full window")
	}
	for _, release := range releases {
		release()
	}

	// A second instance on the same registry under the same name must not panic; its metrics are skipped.
	second := newEngine(Config[any, any]{Name: "api", Registerer: reg})
	second.Close()

	got := coretest.Gather(t, reg)
	for name, want := range map[string]float64{
		`fiberguard_throttle_window{name="api"}`:                                                     3,
		`fiberguard_throttle_window_bound{bound="min",name="api"}`:                                   3,
		`fiberguard_throttle_window_bound{bound="max",name="api"}`:                                   9,
		`fiberguard_throttle_in_flight{name="api"}`:                                                  0,
		`fiberguard_throttle_requests_total{decision="admitted",name="api"}`:                         3,
		`fiberguard_throttle_requests_total{decision="rejected",name="api"}`:                         1,
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

	e.Close()
	if n := len(coretest.Gather(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close unregistered the metrics", n)
	}
}

// TestRegistererNilUsesTheDefaultRegistry: without a Registerer the metrics go to prometheus.DefaultRegisterer,
// and Close takes them away again.
func TestRegistererNilUsesTheDefaultRegistry(t *testing.T) {
	const series = `fiberguard_throttle_window{name="default_registerer_test"}`
	e := newEngine(Config[any, any]{Name: "default_registerer_test", WindowMin: 7})
	if v, ok := coretest.Gather(t, prometheus.DefaultGatherer)[series]; !ok || v != 7 {
		t.Fatalf("%s = %v (present %t) on the default registry, want 7", series, v, ok)
	}
	e.Close()
	if _, ok := coretest.Gather(t, prometheus.DefaultGatherer)[series]; ok {
		t.Fatalf("%s still on the default registry after Close", series)
	}
}
