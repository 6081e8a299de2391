package throttle

import (
	"testing"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsCountRequests: the middleware's decisions reach the metrics on Config.Registerer, labelled by
// Config.Name, and Close unregisters them. (The core's tests cover every metric.)
func TestMetricsCountRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	th := NewThrottler(Config{Name: "api", Registerer: reg, WindowMin: 1, WindowMax: 1})
	defer th.Close()
	app, release := occupied(th)
	mustGet(t, app, "/ok") // rejected: the window of 1 is taken
	release()
	mustGet(t, app, "/ok")

	got := coretest.Gather(t, reg)
	for name, want := range map[string]float64{
		`fiberguard_throttle_requests_total{decision="admitted",name="api"}`: 2,
		`fiberguard_throttle_requests_total{decision="rejected",name="api"}`: 1,
		`fiberguard_throttle_in_flight{name="api"}`:                          0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", name, v, ok, want)
		}
	}
	th.Close()
	if n := len(coretest.Gather(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close unregistered the metrics", n)
	}
}
