// Package throttle limits the number of concurrent requests to an AIMD congestion window steered by triggers. A
// trigger is a backpressure signal: a PromQL query (against a Prometheus server) or a func (evaluated in process)
// that fires or not. While no trigger fires the window grows by one per window's worth of completed requests;
// each evaluation of a firing trigger halves it. Requests beyond the window are rejected (503 with Retry-After
// by default).
//
// This is the Fiber v2 adapter: the configuration, the middleware, the window, the triggers and their goroutines,
// the metrics and Status live in github.com/fiberguard/fiberguard/throttle/core: import it for
// the names that go into a Config (Trigger, FailOpen, ...) and the types of Status.
package throttle

import (
	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *fiber.Ctx) bool: nil
//   - PrometheusURL string: ""
//   - Queries []string: nil
//   - Triggers []Trigger: nil
//   - Interval time.Duration: 15s
//   - Timeout time.Duration: 5s, or the trigger's Interval if shorter
//   - Staleness time.Duration: 4 × the trigger's Interval (1 minute at the default Interval)
//   - FailMode FailMode: FailOpen
//   - WindowMin int: 10 (or WindowMax if smaller)
//   - WindowMax int: 1000 (or WindowMin if larger)
//   - OnReject fiber.Handler: 503 with a short text body naming the module (see the adapter's ConfigDefault)
//   - RetryAfter time.Duration: time.Second
//   - RoundTripper http.RoundTripper: nil (the Prometheus client's default transport)
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close)
type Config = core.Config[*fiber.Ctx, fiber.Handler]

// ConfigDefault is the default config.
var ConfigDefault = core.Defaults[*fiber.Ctx, fiber.Handler](func(c *fiber.Ctx) error {
	return c.Status(fiber.StatusServiceUnavailable).SendString("throttle: concurrency limit reached, retry later\n")
})

// Throttler owns a concurrency window, the goroutines evaluating its triggers, and the middleware that admits
// requests into the window. Create it with NewThrottler and stop it with Close.
type Throttler = core.Throttler[*fiber.Ctx, fiber.Handler]

// New creates a throttling middleware: NewThrottler(config...).Handler(). Its trigger goroutines run until
// Config.Context is done (for the life of the process without one); use NewThrottler for a handle that can be
// closed and inspected.
func New(config ...Config) fiber.Handler {
	return NewThrottler(config...).Handler()
}

// NewThrottler fills the zero fields of the config from ConfigDefault, validates it (panicking on invalid values,
// naming the field), registers the metrics, starts one goroutine per trigger (each evaluates its trigger at once,
// then every Interval) and returns the Throttler without waiting for any evaluation. The goroutines stop when Close
// is called or Config.Context is done.
func NewThrottler(config ...Config) *Throttler {
	return core.NewThrottler(ConfigDefault, fiberLog{}, config...)
}

// fiberLog sends the engine's messages to Fiber's logger, whichever is set when they are logged.
type fiberLog struct{}

func (fiberLog) Infof(format string, v ...any)  { log.Infof(format, v...) }
func (fiberLog) Warnf(format string, v ...any)  { log.Warnf(format, v...) }
func (fiberLog) Errorf(format string, v ...any) { log.Errorf(format, v...) }
