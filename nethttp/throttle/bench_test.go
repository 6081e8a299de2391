package throttle_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fiberguard/fiberguard/nethttp/throttle"
)

// passthrough is the baseline: a middleware that only calls the next handler.
func passthrough(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
}

// final is the handler behind the middleware: a 200 with no body.
var final = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

// BenchmarkThrottle is the middleware's cost per request: the bare handler, a pass-through middleware (the floor
// for any middleware), the Throttler admitting, and rejecting with the default OnReject.
//
//	cd nethttp/throttle && go test -run '^$' -bench Throttle -benchmem
func BenchmarkThrottle(b *testing.B) {
	b.Run("bare", func(b *testing.B) { runBench(b, final, http.StatusOK) })
	b.Run("passthrough", func(b *testing.B) { runBench(b, passthrough(final), http.StatusOK) })
	b.Run("admitted", func(b *testing.B) {
		th := throttle.NewThrottler(throttle.Config{WindowMin: 100, WindowMax: 100, DisableMetrics: true})
		defer th.Close()
		runBench(b, th.Handler()(final), http.StatusOK)
	})
	// A request turned away by the default OnReject: 503, a text body, Retry-After and Fiberguard-Rejected-By.
	b.Run("rejected", func(b *testing.B) {
		th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
		defer th.Close()
		h, release := occupied(th)
		defer release()
		runBenchPath(b, h, "/ok", http.StatusServiceUnavailable)
	})
	b.Run("admitted-parallel", func(b *testing.B) {
		th := throttle.NewThrottler(throttle.Config{WindowMin: 1000, WindowMax: 1000, DisableMetrics: true})
		defer th.Close()
		h := th.Handler()(final)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req, rec := httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder()
			for pb.Next() {
				h.ServeHTTP(rec, req)
			}
		})
	})
}

func runBench(b *testing.B, h http.Handler, want int) { runBenchPath(b, h, "/", want) }

// runBenchPath serves GET path b.N times into one recorder, so that the figures are the handler's and not the
// recorder's (a fresh recorder allocates its header map and snapshot), and checks the status.
func runBenchPath(b *testing.B, h http.Handler, path string, want int) {
	b.Helper()
	req, rec := httptest.NewRequest(http.MethodGet, path, nil), httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("status %d, want %d", rec.Code, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		h.ServeHTTP(rec, req)
	}
}
