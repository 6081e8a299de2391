package bench

import (
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
