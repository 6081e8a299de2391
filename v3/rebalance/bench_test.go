package rebalance

import (
	"context"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// afterOneInterval is a Rebalancer after its first interval: balanced, with no budget, or shedding with a budget
// no run spends (2^40 connections against an average of 2^30 at ShedRate 1: 2^30 connections).
func afterOneInterval(tb testing.TB, shedding bool) *Rebalancer {
	tb.Helper()
	local, average := 60, 60.0
	if shedding {
		local, average = 1<<40, 1<<30
	}
	r := newRebalancer(configDefault(Config{
		Cluster:        fixed(average, 3),
		Connections:    func() int { return local },
		ShedRate:       1,
		MinConnections: -1,
		DisableMetrics: true,
	}))
	r.engine.Evaluate(context.Background())
	if st := r.Status(); (st.Budget > 0) != shedding {
		tb.Fatalf("status %+v, want shedding %v", st, shedding)
	}
	return r
}

// benchmarkHandler drives app.Handler() with a hand-built request through mw (none when nil), reusing the
// context as the server does.
func benchmarkHandler(b *testing.B, mw fiber.Handler) {
	app := fiber.New()
	if mw != nil {
		app.Use(mw)
	}
	app.Get("/", func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	h := app.Handler()

	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		h(&ctx)
	}
}

// BenchmarkHandler/bare is the app alone; next a middleware that only calls c.Next() (the floor of any
// middleware); passthrough a balanced node (no budget); shedding a node with budget left, every request closing
// its connection.
func BenchmarkHandler(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchmarkHandler(b, nil) })
	b.Run("next", func(b *testing.B) { benchmarkHandler(b, func(c fiber.Ctx) error { return c.Next() }) })
	b.Run("passthrough", func(b *testing.B) { benchmarkHandler(b, afterOneInterval(b, false).Handler()) })
	b.Run("shedding", func(b *testing.B) { benchmarkHandler(b, afterOneInterval(b, true).Handler()) })
}

func BenchmarkHandlerParallel(b *testing.B) {
	h := newApp(afterOneInterval(b, true).Handler()).Handler()
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
		name     string
		shedding bool
		shed     uint64
	}{{"passthrough", false, 0}, {"shedding", true, 1002}} {
		t.Run(tt.name, func(t *testing.T) {
			r := afterOneInterval(t, tt.shedding)
			h := newApp(r.Handler()).Handler()
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/")
			ctx.Request.Header.SetMethod(fiber.MethodGet)
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
			if got := r.Status().Shed; got != tt.shed {
				t.Fatalf("%d connections shed, want %d: every request of the run", got, tt.shed)
			}
		})
	}
}
