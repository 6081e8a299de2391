// Package loadshed rejects requests with a probability that grows with the load of the CPU the process may use
// (its container's limit, not the host's): none below Config.Lower, all above Config.Upper.
//
// New returns the middleware; NewShedder returns the Shedder behind it, with Status for a status page and Close
// to stop its sampler. This is the Fiber v2 adapter: the signals, the policy, the sampler and the metrics live in
// github.com/fiberguard/fiberguard/loadshed/core, whose public names this package re-exports.
package loadshed

import (
	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
)

// New creates a load-shedding middleware: NewShedder(config...).Handler(). Its background sampler runs until
// Config.Context is done (for ever when Context is nil); use NewShedder for a handle that can be closed and
// queried.
func New(config ...Config) fiber.Handler {
	return NewShedder(config...).Handler()
}

// Shedder owns a background sampler of the load and the middleware that rejects by it. Create it with
// NewShedder and stop it with Close.
type Shedder struct {
	engine   *core.Engine
	next     func(*fiber.Ctx) bool
	critical func(*fiber.Ctx) bool
	onReject fiber.Handler
	// The header values of a rejection, built once by the engine: retryAfter is nil when none is sent.
	retryAfter, rejectedBy []byte
}

// NewShedder validates config (panicking on invalid values, naming the field), takes the first load reading and
// starts the background sampler.
func NewShedder(config ...Config) *Shedder {
	cfg := configDefault(config...)
	cfg.validate()
	e := core.NewEngine(cfg.core())
	return &Shedder{
		engine:     e,
		next:       cfg.Next,
		critical:   cfg.Critical,
		onReject:   cfg.OnReject,
		retryAfter: e.RetryAfter(),
		rejectedBy: e.RejectedBy(),
	}
}

// Handler returns the middleware. Every call returns the same handler over the Shedder's state.
func (s *Shedder) Handler() fiber.Handler {
	return s.handle
}

func (s *Shedder) handle(c *fiber.Ctx) error {
	if s.next != nil && s.next(c) {
		return c.Next()
	}
	if s.engine.Admit(s.critical != nil && s.critical(c)) {
		defer s.engine.Done()
		return c.Next()
	}
	h := &c.Response().Header
	if s.retryAfter != nil {
		h.SetCanonical(retryAfterKey, s.retryAfter)
	}
	h.SetCanonical(rejectedByKey, s.rejectedBy)
	return s.onReject(c)
}

var (
	retryAfterKey = []byte(core.HeaderRetryAfter)
	rejectedByKey = []byte(core.HeaderRejectedBy)
)

// Status returns the current load, probabilities and counters. Each call returns fresh values; it is safe to
// call concurrently with requests and the sampler.
func (s *Shedder) Status() Status { return s.engine.Status() }

// Close stops the sampler, waits for it to exit and unregisters the metrics. The middleware keeps answering
// with the last load. Close is idempotent, safe to call concurrently with requests, and returns nil.
func (s *Shedder) Close() error { return s.engine.Close() }

// fiberLog sends the engine's messages to Fiber's logger, whichever is set when they are logged.
type fiberLog struct{}

func (fiberLog) Infof(format string, v ...any) { log.Infof(format, v...) }
func (fiberLog) Warnf(format string, v ...any) { log.Warnf(format, v...) }
