package bench

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/fiberguard/fiberguard/throttle"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	"github.com/gofiber/fiber/v2"
	"github.com/kevindweb/throttle-proxy/proxymw"
	"github.com/platinummonkey/go-concurrency-limits/core"
	"github.com/platinummonkey/go-concurrency-limits/limit"
	"github.com/platinummonkey/go-concurrency-limits/limiter"
	"github.com/platinummonkey/go-concurrency-limits/strategy"
	"github.com/valyala/fasthttp"
)

// The three concurrency limiters compared here, each configured so that its window/limit is large enough to
// admit every benchmark request (the "admit" cases) or pinned full (the "reject" cases):
//   - fiberguard throttle: throttle.Window (lock-free) and the Fiber middleware;
//   - kevindweb/throttle-proxy v0.1.31: proxymw.Backpressure.Next, its AIMD congestion window (a mutex);
//   - platinummonkey/go-concurrency-limits v1.0.0: limiter.DefaultLimiter with an AIMD limit and the simple
//     strategy (Acquire returns a listener; OnSuccess releases it).

const benchWindow = 1 << 20

// proxyRequest carries the Fiber context through throttle-proxy's chain. One pointer field: converting it to
// the proxymw.Request interface does not allocate.
type proxyRequest struct{ c *fiber.Ctx }

func (r proxyRequest) Request() *http.Request { return nil }

// proxyExit is the end of throttle-proxy's chain: the rest of the Fiber handlers.
type proxyExit struct{}

func (proxyExit) Init(context.Context) {}
func (proxyExit) Next(rr proxymw.Request) error {
	if r, ok := rr.(proxyRequest); ok && r.c != nil {
		return r.c.Next()
	}
	return nil
}

func newBackpressure(window int) *proxymw.Backpressure {
	// No queries: Init (which would start the query goroutines) is not needed for the request path.
	return proxymw.NewBackpressure(proxyExit{}, proxymw.BackpressureConfig{
		EnableBackpressure:  true,
		CongestionWindowMin: window,
		CongestionWindowMax: window,
	})
}

// backpressureMiddleware is the natural Fiber wrapping of throttle-proxy's Backpressure.
func backpressureMiddleware(bp *proxymw.Backpressure) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := bp.Next(proxyRequest{c}); err != nil {
			if errors.Is(err, proxymw.ErrBackpressureBackoff) {
				return c.SendStatus(fiber.StatusServiceUnavailable)
			}
			return err
		}
		return nil
	}
}

func newConcurrencyLimiter(b *testing.B, window int) *limiter.DefaultLimiter {
	l, err := limiter.NewDefaultLimiter(
		limit.NewAIMDLimit("bench", window, 0.5, 1, core.EmptyMetricRegistryInstance),
		1e9, 1e9, 1e5, 100,
		strategy.NewSimpleStrategy(window),
		limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance,
	)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// concurrencyLimitsMiddleware is the natural Fiber wrapping of go-concurrency-limits (as its HTTP middleware does).
func concurrencyLimitsMiddleware(l *limiter.DefaultLimiter) fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, ok := l.Acquire(c.Context())
		if !ok {
			return c.SendStatus(fiber.StatusServiceUnavailable)
		}
		err := c.Next()
		token.OnSuccess()
		return err
	}
}

func newThrottler(b *testing.B, window int) *throttle.Throttler {
	th := throttle.NewThrottler(throttle.Config{WindowMin: window, WindowMax: window, DisableMetrics: true})
	b.Cleanup(func() { _ = th.Close() })
	return th
}

// BenchmarkThrottleAdmission is the cost of admitting one request and releasing its slot, without Fiber, serial
// and with every CPU admitting into the same limiter.
//
//	cd bench && go test -run '^$' -bench ThrottleAdmission -benchmem -count 5 .
func BenchmarkThrottleAdmission(b *testing.B) {
	ctx := context.Background()
	cases := []struct {
		name  string
		admit func(b *testing.B) func()
	}{
		{"fiberguard_throttle", func(b *testing.B) func() {
			w := throttlecore.NewWindow(benchWindow, benchWindow)
			return func() {
				if w.TryAcquire() {
					w.Release()
				}
			}
		}},
		{"throttle_proxy", func(b *testing.B) func() {
			bp := newBackpressure(benchWindow)
			return func() { _ = bp.Next(proxyRequest{}) }
		}},
		{"go_concurrency_limits", func(b *testing.B) func() {
			l := newConcurrencyLimiter(b, benchWindow)
			return func() {
				if token, ok := l.Acquire(ctx); ok {
					token.OnSuccess()
				}
			}
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			admit := tc.admit(b)
			b.ReportAllocs()
			for b.Loop() {
				admit()
			}
		})
		b.Run(tc.name+"_parallel", func(b *testing.B) {
			admit := tc.admit(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					admit()
				}
			})
		})
	}
}

// throttleServe drives GET / through an app with mw via app.Handler() and a hand-built request, and checks
// the final status.
func throttleServe(b *testing.B, want int, mw fiber.Handler, parallel bool) {
	b.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	if mw != nil {
		app.Use(mw)
	}
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	h := app.Handler()
	newCtx := func() *fasthttp.RequestCtx {
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.Header.SetMethod(fiber.MethodGet)
		ctx.Request.SetRequestURI("/")
		return ctx
	}
	b.ReportAllocs()
	if !parallel {
		ctx := newCtx()
		for b.Loop() {
			h(ctx)
		}
		if got := ctx.Response.StatusCode(); got != want {
			b.Fatalf("status %d, want %d", got, want)
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		ctx := newCtx()
		for pb.Next() {
			h(ctx)
		}
		if got := ctx.Response.StatusCode(); got != want {
			b.Errorf("status %d, want %d", got, want)
		}
	})
}

// BenchmarkThrottleMiddleware compares the limiters as Fiber middleware, admitting and rejecting.
//
//	cd bench && go test -run '^$' -bench ThrottleMiddleware -benchmem -count 5 .
func BenchmarkThrottleMiddleware(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		suffix := ""
		if parallel {
			suffix = "_parallel"
		}
		b.Run("bare"+suffix, func(b *testing.B) { throttleServe(b, 200, nil, parallel) })
		b.Run("passthrough"+suffix, func(b *testing.B) {
			throttleServe(b, 200, func(c *fiber.Ctx) error { return c.Next() }, parallel)
		})
		b.Run("fiberguard_throttle_admit"+suffix, func(b *testing.B) {
			throttleServe(b, 200, newThrottler(b, benchWindow).Handler(), parallel)
		})
		b.Run("throttle_proxy_admit"+suffix, func(b *testing.B) {
			throttleServe(b, 200, backpressureMiddleware(newBackpressure(benchWindow)), parallel)
		})
		b.Run("go_concurrency_limits_admit"+suffix, func(b *testing.B) {
			throttleServe(b, 200, concurrencyLimitsMiddleware(newConcurrencyLimiter(b, benchWindow)), parallel)
		})
	}
	// Rejecting: each limiter's window of 1 is held by a request parked in its handler.
	b.Run("fiberguard_throttle_reject", func(b *testing.B) { throttleServeFull(b, newThrottler(b, 1).Handler()) })
	b.Run("throttle_proxy_reject", func(b *testing.B) { throttleServeFull(b, backpressureMiddleware(newBackpressure(1))) })
	b.Run("go_concurrency_limits_reject", func(b *testing.B) {
		throttleServeFull(b, concurrencyLimitsMiddleware(newConcurrencyLimiter(b, 1)))
	})
}

// throttleServeFull measures GET / rejected by mw while a request to /hold occupies mw's only slot.
func throttleServeFull(b *testing.B, mw fiber.Handler) {
	b.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(mw)
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	app.Get("/hold", func(c *fiber.Ctx) error {
		close(entered)
		<-release
		return nil
	})
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	h := app.Handler()
	go func() {
		defer close(done)
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.SetRequestURI("/hold")
		h(ctx)
	}()
	<-entered
	defer func() { close(release); <-done }()

	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI("/")
	b.ReportAllocs()
	for b.Loop() {
		h(ctx)
	}
	if got := ctx.Response.StatusCode(); got != fiber.StatusServiceUnavailable {
		b.Fatalf("status %d, want 503", got)
	}
}
