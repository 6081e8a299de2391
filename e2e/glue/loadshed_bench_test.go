package glue

import (
	"testing"

	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/valyala/fasthttp"
)

// BenchmarkLoadshed is the request path of both versions in one run: a bare app, a pass-through middleware (the
// baseline), and the Shedder accepting, rejecting and deciding by a draw at probability one half.
func BenchmarkLoadshed(b *testing.B) {
	b.Run("fiber-v2", func(b *testing.B) { loadshedBench(b, loadshedV2) })
	b.Run("fiber-v3", func(b *testing.B) { loadshedBench(b, loadshedV3) })
}

func loadshedBench[C core.Ctx, H ~func(C) error](b *testing.B, a loadshedAdapter[C, H]) {
	shedder := func(b *testing.B, load float64) H {
		s := a.newShedder(config[C, H]{Signal: coretest.NewFixedLoad(load), Smoothing: 1, DisableMetrics: true})
		b.Cleanup(func() { _ = s.Close() })
		return s.Handler()
	}
	for _, tc := range []struct {
		name string
		mw   func(b *testing.B) H
		want int // 0: either
	}{
		{"bare", nil, 200},
		{"passthrough", func(*testing.B) H { return a.fv.next }, 200},
		{"loadshed_accept", func(b *testing.B) H { return shedder(b, 0.5) }, 200},
		{"loadshed_reject", func(b *testing.B) H { return shedder(b, 1) }, 503},
		{"loadshed_band", func(b *testing.B) H { return shedder(b, 0.925) }, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ap := a.fv.newFiberApp()
			if tc.mw != nil {
				ap.Use(tc.mw(b))
			}
			ap.Get("/", func(c C) error { return a.fv.send(c, 200, "") })
			runBench(b, ap.Handler(), tc.want)
		})
	}
}

// runBench serves GET / b.N times on one request context and checks the last answer's status (0: any).
func runBench(b *testing.B, h fasthttp.RequestHandler, want int) {
	b.Helper()
	ctx := requestCtx("/")
	b.ReportAllocs()
	for b.Loop() {
		h(ctx)
	}
	if got := ctx.Response.StatusCode(); want != 0 && got != want {
		b.Fatalf("status %d, want %d", got, want)
	}
}

// BenchmarkLoadshedParallel is the request path under every P at once: the counters are shared.
func BenchmarkLoadshedParallel(b *testing.B) {
	b.Run("fiber-v2", func(b *testing.B) { loadshedParallel(b, loadshedV2) })
	b.Run("fiber-v3", func(b *testing.B) { loadshedParallel(b, loadshedV3) })
}

func loadshedParallel[C core.Ctx, H ~func(C) error](b *testing.B, a loadshedAdapter[C, H]) {
	for _, tc := range []struct {
		name string
		load float64
		want int
	}{{"accept", 0.5, 200}, {"reject", 1, 503}} {
		b.Run(tc.name, func(b *testing.B) {
			s := a.newShedder(config[C, H]{Signal: coretest.NewFixedLoad(tc.load), Smoothing: 1, DisableMetrics: true})
			defer s.Close()
			ap := a.fv.newFiberApp()
			ap.Use(s.Handler())
			ap.Get("/", func(c C) error { return a.fv.send(c, 200, "") })
			h := ap.Handler()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := requestCtx("/")
				ran := false
				for pb.Next() {
					h(ctx)
					ran = true
				}
				if ran && ctx.Response.StatusCode() != tc.want {
					b.Errorf("status %d, want %d", ctx.Response.StatusCode(), tc.want)
				}
			})
		})
	}
}
