package throttle

import (
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

func benchApp(b *testing.B, mw fiber.Handler) fasthttp.RequestHandler {
	app := fiber.New()
	if mw != nil {
		app.Use(mw)
	}
	app.Get("/", func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	return app.Handler()
}

func benchRequest() *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI("/")
	return ctx
}

func runHandler(b *testing.B, h fasthttp.RequestHandler, want int) {
	ctx := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		h(ctx)
	}
	if got := ctx.Response.StatusCode(); got != want {
		b.Fatalf("status %d, want %d", got, want)
	}
}

// BenchmarkHandlerBaseline is the app without the middleware, to subtract.
func BenchmarkHandlerBaseline(b *testing.B) { runHandler(b, benchApp(b, nil), fiber.StatusOK) }

// BenchmarkHandlerPassThrough is the app with a middleware that only calls Next: the floor for any middleware.
func BenchmarkHandlerPassThrough(b *testing.B) {
	runHandler(b, benchApp(b, func(c fiber.Ctx) error { return c.Next() }), fiber.StatusOK)
}

// BenchmarkHandlerAdmitted is a request admitted into the window and released.
func BenchmarkHandlerAdmitted(b *testing.B) {
	th := NewThrottler(Config{WindowMin: 100, WindowMax: 100, DisableMetrics: true})
	defer th.Close()
	runHandler(b, benchApp(b, th.Handler()), fiber.StatusOK)
}

// BenchmarkHandlerRejected is a request turned away by the default OnReject: 503, a text body, Retry-After and
// Fiberguard-Rejected-By.
func BenchmarkHandlerRejected(b *testing.B) {
	th := NewThrottler(Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
	defer th.Close()
	th.engine.TryAcquire() // fills the window of 1
	runHandler(b, benchApp(b, th.Handler()), fiber.StatusServiceUnavailable)
}

// BenchmarkHandlerAdmittedParallel is admission through app.Handler() from every CPU.
func BenchmarkHandlerAdmittedParallel(b *testing.B) {
	th := NewThrottler(Config{WindowMin: 1000, WindowMax: 1000, DisableMetrics: true})
	defer th.Close()
	h := benchApp(b, th.Handler())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := benchRequest()
		for pb.Next() {
			h(ctx)
		}
	})
}

// TestHandlerAllocatesNothing: neither an admitted request nor one rejected by the default OnReject allocates
// (the benchmarks' -benchmem figures, as a test that fails).
func TestHandlerAllocatesNothing(t *testing.T) {
	for _, tt := range []struct {
		name   string
		window int // 0: filled before the run
		want   int
	}{{"admitted", 100, fiber.StatusOK}, {"rejected", 0, fiber.StatusServiceUnavailable}} {
		t.Run(tt.name, func(t *testing.T) {
			th := NewThrottler(Config{WindowMin: max(tt.window, 1), WindowMax: max(tt.window, 1), DisableMetrics: true})
			defer th.Close()
			if tt.window == 0 {
				th.engine.TryAcquire()
			}
			app := fiber.New()
			app.Use(th.Handler())
			app.Get("/", func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
			h, ctx := app.Handler(), benchRequest()
			h(ctx) // the app's first request warms its pools
			if allocs := testing.AllocsPerRun(1000, func() { h(ctx) }); allocs != 0 {
				t.Fatalf("%v allocations per request, want 0", allocs)
			}
			if got := ctx.Response.StatusCode(); got != tt.want {
				t.Fatalf("status %d, want %d", got, tt.want)
			}
		})
	}
}
