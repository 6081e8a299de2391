// Package throttle limits the number of concurrent requests to an AIMD congestion window steered by triggers. A
// trigger is a backpressure signal: a PromQL query (against a Prometheus server) or a func (evaluated in process)
// that fires or not. While no trigger fires the window grows by one per window's worth of completed requests;
// each evaluation of a firing trigger halves it. Requests beyond the window are rejected (503 with Retry-After
// by default).
package throttle

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// New creates a throttling middleware. Its trigger goroutines run until Config.Context is done; use NewThrottler
// for a handle that can be closed and inspected.
func New(config ...Config) fiber.Handler {
	return NewThrottler(config...).Handler()
}

// Handler returns the middleware.
func (t *Throttler) Handler() fiber.Handler {
	return t.handle
}

func (t *Throttler) handle(c *fiber.Ctx) error {
	if t.next != nil && t.next(c) {
		return c.Next()
	}
	if !t.window.TryAcquire() {
		t.rejected.Add(1)
		return t.limitReached(c)
	}
	// Deferred so that the slot comes back when a later handler panics, as well as on success and error.
	defer t.window.Release()
	t.admitted.Add(1)
	return c.Next()
}

// rejectWith returns the default LimitReached handler. The header value is formatted once, here, so the
// request path does not allocate.
func rejectWith(status int, retryAfter time.Duration) fiber.Handler {
	var value []byte
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		value = strconv.AppendInt(nil, secs, 10)
	}
	key := []byte(fiber.HeaderRetryAfter) // already canonical: no normalization per request
	return func(c *fiber.Ctx) error {
		c.Status(status)
		if value != nil {
			c.Response().Header.SetCanonical(key, value)
		}
		return nil
	}
}
