// Package loadshed rejects requests with a probability that grows with the load of the CPU the process may use
// (its container's limit, not the host's): none below Config.Lower, all above Config.Upper.
//
// New returns the middleware; NewShedder returns the Shedder behind it, with Status for a status page and Close
// to stop its sampler. This is the Fiber v2 adapter (github.com/fiberguard/fiberguard/v3/loadshed is the Fiber v3
// one): the Config, the signals, the controller, the sampler and the metrics live in
// github.com/fiberguard/fiberguard/loadshed/core: import it for the names that go into a Config and the types of Status.
package loadshed

import (
	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *fiber.Ctx) bool: nil
//   - Lower float64: 0.90
//   - Upper float64: 0.95
//   - Critical func(c *fiber.Ctx) bool: nil (no request is critical)
//   - CriticalLower float64: 0.98
//   - CriticalUpper float64: 1.0
//   - DryRun bool: false
//   - Signal Signal: DefaultSignal(CPUs), a Controller over the utilisation of the CPU the process may use beside its
//     goroutines' scheduling latency and run queue: it sheds the share of requests that holds the CPU at 0.97 of what
//     the process may use, and while its goroutines queue for a CPU (waits over 7ms, or 2 runnable goroutines per P) it
//     limits the requests in flight
//   - CPUs float64: 0 (detected from the cgroup, else the host)
//   - Target float64: 0.97 (DefaultControlTarget)
//   - Interval time.Duration: 20ms
//   - IdleInterval time.Duration: 320ms, or Interval if longer
//   - Smoothing float64: 0.2 (about 100ms of memory at the default Interval)
//   - OnReject fiber.Handler: 503 with the text body "loadshed: overloaded, retry later" (the adapter's ConfigDefault)
//   - RetryAfter time.Duration: time.Second
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close)
type Config = core.Config[*fiber.Ctx, fiber.Handler]

// ConfigDefault is the default config. Its OnReject answers 503 with a short text body naming the module.
var ConfigDefault = core.Defaults[*fiber.Ctx, fiber.Handler](func(c *fiber.Ctx) error {
	return c.Status(fiber.StatusServiceUnavailable).SendString("loadshed: overloaded, retry later\n")
})

// Shedder owns a background sampler of the load and the middleware that rejects by it: Handler, Status and
// Close. Create it with NewShedder.
type Shedder = core.Shedder[*fiber.Ctx, fiber.Handler]

// New creates a load-shedding middleware: NewShedder(config...).Handler(). Its background sampler runs until
// Config.Context is done (for ever when Context is nil); use NewShedder for a handle that can be closed and
// queried.
func New(config ...Config) fiber.Handler {
	return NewShedder(config...).Handler()
}

// NewShedder fills the zero fields of the config from ConfigDefault, validates it (panicking on invalid values,
// naming the field), takes the first load reading and starts the background sampler.
func NewShedder(config ...Config) *Shedder {
	return core.NewShedder(ConfigDefault, fiberLog{}, config...)
}

// fiberLog sends the engine's messages to Fiber's logger, whichever is set when they are logged.
type fiberLog struct{}

func (fiberLog) Infof(format string, v ...any) { log.Infof(format, v...) }
func (fiberLog) Warnf(format string, v ...any) { log.Warnf(format, v...) }
