package bench

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/valyala/fasthttp"
)

// fixedLoad is a loadshedcore.Signal pinned to one value, so the benchmark measures the request path alone.
type fixedLoad struct{ bits atomic.Uint64 }

func (f *fixedLoad) Load() (float64, error) { return math.Float64frombits(f.bits.Load()), nil }

func shedderAt(b *testing.B, load float64) fiber.Handler {
	sig := &fixedLoad{}
	sig.bits.Store(math.Float64bits(load))
	s := loadshed.NewShedder(loadshed.Config{Signal: sig, Smoothing: 1, DisableMetrics: true})
	b.Cleanup(func() { _ = s.Close() })
	return s.Handler()
}

// serve runs GET / through an app with the given middleware, b.N times, and checks the final status.
func serve(b *testing.B, want int, mw ...fiber.Handler) {
	b.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	for _, m := range mw {
		app.Use(m)
	}
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	h := app.Handler()
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI("/")
	h(ctx) // warm up (and trip limiters whose reject path is measured)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h(ctx)
	}
	b.StopTimer()
	if got := ctx.Response.StatusCode(); got != want {
		b.Fatalf("status %d, want %d", got, want)
	}
}

// BenchmarkShedders compares the per-request cost of load shedders and limiters in one run.
//
//	cd bench && go test -run '^$' -bench Shedders -benchmem -count 5 .
func BenchmarkShedders(b *testing.B) {
	b.Run("bare", func(b *testing.B) { serve(b, 200) })
	b.Run("passthrough", func(b *testing.B) { serve(b, 200, func(c *fiber.Ctx) error { return c.Next() }) })
	b.Run("loadshed_accept", func(b *testing.B) { serve(b, 200, shedderAt(b, 0.5)) })
	b.Run("loadshed_reject", func(b *testing.B) { serve(b, 503, shedderAt(b, 1)) })
	b.Run("fiber_limiter_accept", func(b *testing.B) {
		serve(b, 200, limiter.New(limiter.Config{Max: math.MaxInt32, Expiration: time.Hour}))
	})
	b.Run("fiber_limiter_reject", func(b *testing.B) {
		serve(b, 429, limiter.New(limiter.Config{Max: 1, Expiration: time.Hour}))
	})
	b.Run("aegis_bbr_accept", func(b *testing.B) {
		// A threshold above 100% CPU: BBR admits everything, so this is its accept path.
		serve(b, 200, BBRMiddleware(bbr.NewLimiter(bbr.WithCPUThreshold(1001))))
	})
}
