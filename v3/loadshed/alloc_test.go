package loadshed

import (
	"testing"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
)

// The request path allocates nothing, accepted or rejected by the default OnReject (the benchmarks show the
// same with -benchmem; this keeps it from regressing unnoticed).
func TestRequestPathDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		name string
		load float64
		want int
	}{{"accept", 0.5, 200}, {"reject", 1, 503}} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(tc.load), DisableMetrics: true})
			h, ctx := benchApp(s.Handler())
			h(ctx) // warm the response buffers
			if n := testing.AllocsPerRun(1000, func() { h(ctx) }); n != 0 {
				t.Errorf("%v allocations per request, want 0", n)
			}
			if got := ctx.Response.StatusCode(); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}
