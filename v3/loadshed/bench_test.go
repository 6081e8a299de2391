package loadshed

import (
	"testing"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// benchApp returns the app's handler and a reusable request context for GET /.
func benchApp(mw ...fiber.Handler) (fasthttp.RequestHandler, *fasthttp.RequestCtx) {
	app := fiber.New()
	for _, m := range mw {
		app.Use(m)
	}
	app.Get("/", func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI("/")
	return app.Handler(), ctx
}

func runHandler(b *testing.B, h fasthttp.RequestHandler, ctx *fasthttp.RequestCtx, wantStatus int) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h(ctx)
	}
	b.StopTimer()
	if got := ctx.Response.StatusCode(); got != wantStatus {
		b.Fatalf("status %d, want %d", got, wantStatus)
	}
}

func benchShedder(b *testing.B, load float64) *Shedder {
	b.Helper()
	s := NewShedder(Config{Signal: coretest.NewFixedLoad(load), Smoothing: 1, DisableMetrics: true})
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func BenchmarkHandler(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		h, ctx := benchApp()
		runHandler(b, h, ctx, 200)
	})
	b.Run("passthrough", func(b *testing.B) {
		h, ctx := benchApp(func(c fiber.Ctx) error { return c.Next() })
		runHandler(b, h, ctx, 200)
	})
	b.Run("loadshed_accept", func(b *testing.B) {
		h, ctx := benchApp(benchShedder(b, 0.5).Handler())
		runHandler(b, h, ctx, 200)
	})
	b.Run("loadshed_reject", func(b *testing.B) {
		h, ctx := benchApp(benchShedder(b, 1).Handler())
		runHandler(b, h, ctx, 503)
	})
	b.Run("loadshed_band", func(b *testing.B) { // p = 0.5: one random draw per request
		h, ctx := benchApp(benchShedder(b, 0.925).Handler())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h(ctx)
		}
	})
}

func BenchmarkHandlerParallel(b *testing.B) {
	for _, tc := range []struct {
		name string
		load float64
		want int
	}{{"accept", 0.5, 200}, {"reject", 1, 503}} {
		b.Run(tc.name, func(b *testing.B) {
			app := fiber.New()
			app.Use(benchShedder(b, tc.load).Handler())
			app.Get("/", func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
			h := app.Handler()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := &fasthttp.RequestCtx{}
				ctx.Request.Header.SetMethod(fiber.MethodGet)
				ctx.Request.SetRequestURI("/")
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
