package rebalance

import (
	"math"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// benchmarkHandler drives app.Handler() with a hand-built request, reusing the context as the server does.
func benchmarkHandler(b *testing.B, budget int64, mount bool) {
	cfg := testConfig(fixed(40, 3), 60)
	cfg.DisableMetrics = true
	r := newRebalancer(cfg)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	if mount {
		app.Use(r.Handler())
	}
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	h := app.Handler()

	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	r.budget.Store(budget)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		h(&ctx)
	}
}

// BenchmarkHandler/bare is the app alone; passthrough a balanced node (no budget); shedding a node with budget
// left, every request closing its connection.
func BenchmarkHandler(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchmarkHandler(b, 0, false) })
	b.Run("passthrough", func(b *testing.B) { benchmarkHandler(b, 0, true) })
	b.Run("shedding", func(b *testing.B) { benchmarkHandler(b, math.MaxInt64, true) })
}

func BenchmarkHandlerParallel(b *testing.B) {
	cfg := testConfig(fixed(40, 3), 60)
	cfg.DisableMetrics = true
	r := newRebalancer(cfg)
	app := newApp(r.Handler())
	h := app.Handler()
	r.budget.Store(math.MaxInt64)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/")
		ctx.Request.Header.SetMethod(fiber.MethodGet)
		for pb.Next() {
			ctx.Response.Reset()
			h(&ctx)
		}
	})
}
