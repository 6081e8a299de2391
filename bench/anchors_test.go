package bench

import (
	"errors"
	"net/http"
	"net/http/httptest"
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

// TestFailsafeHTTPMiddleware: as TestFailsafeMiddleware, for net/http; a panicking handler gives its permit back
// too, since net/http recovers the panic and goes on serving.
func TestFailsafeHTTPMiddleware(t *testing.T) {
	l := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1, 1).Build()
	panics := false
	h := FailsafeHTTPMiddleware(l)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if panics {
			panic(http.ErrAbortHandler)
		}
		w.WriteHeader(http.StatusOK)
	}))
	serve := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		return rec.Code
	}

	if got := serve(); got != http.StatusOK {
		t.Fatalf("free permit: status %d, want 200", got)
	}
	held, ok := l.TryAcquirePermit()
	if !ok {
		t.Fatal("the finished request kept its permit")
	}
	if got := serve(); got != http.StatusServiceUnavailable {
		t.Fatalf("no permit: status %d, want 503", got)
	}
	held.Record()
	panics = true
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handler's panic was swallowed")
			}
		}()
		serve()
	}()
	if _, ok := l.TryAcquirePermit(); !ok {
		t.Fatal("a request that panicked kept its permit")
	}
}
