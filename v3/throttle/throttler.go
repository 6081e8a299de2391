package throttle

import (
	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/log"
)

// Throttler owns a concurrency window, the goroutines evaluating its triggers, and the middleware that admits
// requests into the window. Create it with NewThrottler and stop it with Close.
type Throttler struct {
	// Read by every request: the accept path reads the first two only.
	next     func(fiber.Ctx) bool
	engine   *core.Engine
	onReject fiber.Handler
	// The header values of a rejection, built once by the engine: retryAfter is nil when none is sent.
	retryAfter, rejectedBy []byte
}

// NewThrottler validates config (panicking on invalid values, naming the field), registers the metrics, starts
// one goroutine per trigger (each evaluates its trigger at once, then every Interval) and returns the Throttler
// without waiting for any evaluation. The goroutines stop when Close is called or Config.Context is done.
func NewThrottler(config ...Config) *Throttler {
	cfg := configDefault(config...)
	cfg.validate()
	e := core.NewEngine(cfg.core().WithDefaults(ConfigDefault.core()))
	return &Throttler{
		next:       cfg.Next,
		engine:     e,
		onReject:   cfg.OnReject,
		retryAfter: e.RetryAfter(),
		rejectedBy: e.RejectedBy(),
	}
}

// Status returns the window, counters and every trigger's state. GrowthHeld and the triggers' states are read
// together: GrowthHeld is true exactly when a trigger in Triggers is firing. Each call returns fresh values; it is
// safe to call concurrently with requests and evaluations.
func (t *Throttler) Status() Status { return t.engine.Status() }

// Close stops the trigger goroutines (cancelling evaluations in progress), waits for them to exit, closes idle
// connections to Prometheus and unregisters the metrics. The middleware keeps admitting requests into the last
// window, which no longer backs off. Close is idempotent, safe to call concurrently with requests, and returns
// nil.
func (t *Throttler) Close() error { return t.engine.Close() }

// fiberLog sends the engine's messages to Fiber's logger, whichever is set when they are logged.
type fiberLog struct{}

func (fiberLog) Infof(format string, v ...any)  { log.Infof(format, v...) }
func (fiberLog) Warnf(format string, v ...any)  { log.Warnf(format, v...) }
func (fiberLog) Errorf(format string, v ...any) { log.Errorf(format, v...) }
