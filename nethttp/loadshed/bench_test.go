package loadshed_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/fiberguard/fiberguard/nethttp/loadshed"
)

// passthrough is the baseline: a middleware that only calls the next handler.
func passthrough(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
}

// final is the handler behind the middleware: a 200 with no body.
var final = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

// BenchmarkLoadshed is the request path: the bare handler, a pass-through middleware (the baseline), and the
// Shedder accepting, rejecting with the default OnReject and deciding by a draw at probability one half.
func BenchmarkLoadshed(b *testing.B) {
	shedder := func(b *testing.B, load float64) func(http.Handler) http.Handler {
		s := loadshed.NewShedder(loadshed.Config{Signal: coretest.NewFixedLoad(load), Smoothing: 1, DisableMetrics: true})
		b.Cleanup(func() { _ = s.Close() })
		return s.Handler()
	}
	for _, tc := range []struct {
		name string
		mw   func(b *testing.B) func(http.Handler) http.Handler
		want int // 0: either
	}{
		{"bare", nil, 200},
		{"passthrough", func(*testing.B) func(http.Handler) http.Handler { return passthrough }, 200},
		{"loadshed_accept", func(b *testing.B) func(http.Handler) http.Handler { return shedder(b, 0.5) }, 200},
		{"loadshed_reject", func(b *testing.B) func(http.Handler) http.Handler { return shedder(b, 1) }, 503},
		{"loadshed_band", func(b *testing.B) func(http.Handler) http.Handler { return shedder(b, 0.925) }, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var h http.Handler = final
			if tc.mw != nil {
				h = tc.mw(b)(h)
			}
			runBench(b, h, tc.want)
		})
	}
}

// runBench serves GET / b.N times into one recorder, so that the figures are the handler's and not the
// recorder's (a fresh recorder allocates its header map and snapshot), and checks the status (0: any).
func runBench(b *testing.B, h http.Handler, want int) {
	b.Helper()
	req, rec := httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if want != 0 && rec.Code != want {
		b.Fatalf("status %d, want %d", rec.Code, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		h.ServeHTTP(rec, req)
	}
}

// BenchmarkLoadshedParallel is the request path under every P at once: the counters are shared.
func BenchmarkLoadshedParallel(b *testing.B) {
	for _, tc := range []struct {
		name string
		load float64
		want int
	}{{"accept", 0.5, 200}, {"reject", 1, 503}} {
		b.Run(tc.name, func(b *testing.B) {
			s := loadshed.NewShedder(loadshed.Config{Signal: coretest.NewFixedLoad(tc.load), Smoothing: 1, DisableMetrics: true})
			defer s.Close()
			h := s.Handler()(final)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, rec := httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.want {
					b.Errorf("status %d, want %d", rec.Code, tc.want)
				}
				for pb.Next() {
					rec.Body.Reset()
					h.ServeHTTP(rec, req)
				}
			})
		})
	}
}
