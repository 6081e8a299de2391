package bench

import (
	"errors"
	"testing"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

func get(h fasthttp.RequestHandler) int {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI("/")
	h(ctx)
	return ctx.Response.StatusCode()
}

// TestFailsafeMiddleware: a request without a free permit is shed at once (no queueing), and a finished request
// gives its permit back.
func TestFailsafeMiddleware(t *testing.T) {
	l := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1, 1).Build()
	app := fiber.New()
	app.Use(FailsafeMiddleware(l))
	fail := false
	app.Get("/", func(c *fiber.Ctx) error {
		if fail {
			return errors.New("boom")
		}
		return c.SendStatus(fiber.StatusOK)
	})
	h := app.Handler()

	if got := get(h); got != fiber.StatusOK {
		t.Fatalf("free permit: status %d, want 200", got)
	}
	held, ok := l.TryAcquirePermit()
	if !ok {
		t.Fatal("the finished request kept its permit")
	}
	if got := get(h); got != fiber.StatusServiceUnavailable {
		t.Fatalf("no permit: status %d, want 503", got)
	}
	held.Record()
	fail = true
	if got := get(h); got != fiber.StatusInternalServerError {
		t.Fatalf("handler error: status %d, want 500", got)
	}
	if _, ok := l.TryAcquirePermit(); !ok {
		t.Fatal("a request that failed kept its permit")
	}
}
