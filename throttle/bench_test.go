package throttle

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// BenchmarkWindowAcquireRelease is the admission cost: one TryAcquire and one Release.
func BenchmarkWindowAcquireRelease(b *testing.B) {
	w := NewWindow(MaxWindow, MaxWindow)
	b.ReportAllocs()
	for b.Loop() {
		if w.TryAcquire() {
			w.Release()
		}
	}
}

// BenchmarkWindowAcquireReleaseParallel is the admission cost with every CPU admitting into one window.
func BenchmarkWindowAcquireReleaseParallel(b *testing.B) {
	w := NewWindow(MaxWindow, MaxWindow)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if w.TryAcquire() {
				w.Release()
			}
		}
	})
}

// BenchmarkWindowRejectParallel is the cost of turning a request away from a full window.
func BenchmarkWindowRejectParallel(b *testing.B) {
	w := NewWindow(1, 1)
	w.TryAcquire()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if w.TryAcquire() {
				b.Error("admitted into a full window")
			}
		}
	})
}

func benchApp(b *testing.B, mw fiber.Handler) fasthttp.RequestHandler {
	app := fiber.New()
	if mw != nil {
		app.Use(mw)
	}
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
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
	runHandler(b, benchApp(b, func(c *fiber.Ctx) error { return c.Next() }), fiber.StatusOK)
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
	th.window.TryAcquire()
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
