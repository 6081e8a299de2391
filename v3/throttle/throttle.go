// Package throttle limits the number of concurrent requests to an AIMD congestion window steered by triggers. A
// trigger is a backpressure signal: a PromQL query (against a Prometheus server) or a func (evaluated in process)
// that fires or not. While no trigger fires the window grows by one per window's worth of completed requests;
// each evaluation of a firing trigger halves it. Requests beyond the window are rejected (503 with Retry-After
// by default).
//
// This is the Fiber v3 adapter (github.com/fiberguard/fiberguard/throttle is the Fiber v2 one, with the same Config
// and behaviour): the window, the triggers and their goroutines, the metrics and Status live in
// github.com/fiberguard/fiberguard/throttle/core, whose public names this package re-exports.
package throttle

import (
	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/gofiber/fiber/v3"
)

// New creates a throttling middleware: NewThrottler(config...).Handler(). Its trigger goroutines run until
// Config.Context is done (for the life of the process without one); use NewThrottler for a handle that can be
// closed and inspected.
func New(config ...Config) fiber.Handler {
	return NewThrottler(config...).Handler()
}

// Handler returns the middleware. Every call returns an equivalent handler over the same window.
func (t *Throttler) Handler() fiber.Handler {
	return t.handle
}

func (t *Throttler) handle(c fiber.Ctx) error {
	if t.next != nil && t.next(c) {
		return c.Next()
	}
	release, ok := t.engine.TryAcquire()
	if !ok {
		return t.reject(c)
	}
	// Deferred so that the slot comes back when a later handler panics, as well as on success and error.
	defer release()
	return c.Next()
}

// Header names, already canonical: set with SetCanonical, they are not normalised per request.
var (
	retryAfterKey = []byte(core.HeaderRetryAfter)
	rejectedByKey = []byte(core.HeaderRejectedBy)
)

// reject sets the rejection headers, whose values the engine formatted once, and hands the request to OnReject.
func (t *Throttler) reject(c fiber.Ctx) error {
	h := &c.Response().Header
	if t.retryAfter != nil {
		h.SetCanonical(retryAfterKey, t.retryAfter)
	}
	h.SetCanonical(rejectedByKey, t.rejectedBy)
	return t.onReject(c)
}
