package bench

import (
	"net/http"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/go-kratos/aegis/ratelimit"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/gofiber/fiber/v2"
)

// BBRMiddleware is the usual Fiber wrapping of go-kratos/aegis's BBR limiter, the adaptive shedder loadshed is
// compared with: 503 when BBR drops the request.
func BBRMiddleware(l *bbr.BBR) fiber.Handler {
	return func(c *fiber.Ctx) error {
		done, err := l.Allow()
		if err != nil {
			return c.SendStatus(fiber.StatusServiceUnavailable)
		}
		err = c.Next()
		done(ratelimit.DoneInfo{Err: err})
		return err
	}
}

// FailsafeMiddleware is the usual Fiber wrapping of a failsafe-go adaptive limiter: a permit around the rest of
// the chain, 503 when none is free. It does not wait for a permit, as the limiter's own policy does not by default
// (no queueing: the default max wait is zero).
func FailsafeMiddleware(l adaptivelimiter.AdaptiveLimiter[any]) fiber.Handler {
	return func(c *fiber.Ctx) error {
		permit, ok := l.TryAcquirePermit()
		if !ok {
			return c.SendStatus(fiber.StatusServiceUnavailable)
		}
		err := c.Next()
		permit.Record()
		return err
	}
}

// FailsafeHTTPMiddleware is FailsafeMiddleware for net/http: the same permit around the wrapped handler, 503
// without waiting when none is free. failsafe-go's own failsafehttp.NewHandler is not used: it answers 429 where
// a shed request here is a 503, and it runs each request through an executor and a merged context, a cost the
// Fiber wrapping does not pay, so the two frameworks' rows would differ by more than the framework.
func FailsafeHTTPMiddleware(l adaptivelimiter.AdaptiveLimiter[any]) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			permit, ok := l.TryAcquirePermit()
			if !ok {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			// Deferred: net/http recovers a handler's panic and goes on serving, so the permit must come back.
			defer permit.Record()
			next.ServeHTTP(w, r)
		})
	}
}
