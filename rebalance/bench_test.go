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

// TestHandlerAllocatesNothing: the request path allocates nothing, whether it passes a request through or sheds
// its connection (the benchmarks' -benchmem figures, as a test that fails).
func TestHandlerAllocatesNothing(t *testing.T) {
	for _, tt := range []struct {
		name   string
		budget int64
	}{{"passthrough", 0}, {"shedding", math.MaxInt64}} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRebalancer(testConfig(fixed(40, 3), 60))
			h := newApp(r.Handler()).Handler()
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/")
			ctx.Request.Header.SetMethod(fiber.MethodGet)
			r.budget.Store(tt.budget)
			h(&ctx) // the app's first request warms its pools
			// Only the Connection: close of the last shed is undone: Response.Reset would hand the body buffer
			// back to a pool, which the race detector empties at random.
			allocs := testing.AllocsPerRun(1000, func() {
				ctx.Response.Header.ResetConnectionClose()
				h(&ctx)
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per request, want 0", allocs)
			}
			if want := uint64(min(tt.budget, 1002)); r.Status().Shed != want {
				t.Fatalf("%d connections shed, want %d: every request of the run", r.Status().Shed, want)
			}
		})
	}
}
