package loadshed

import (
	"context"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Config defines the config for the middleware.
type Config struct {
	// Next defines a function to skip this middleware when it returns true (health checks, metrics scrapes).
	//
	// Optional. Default: nil
	Next func(c *fiber.Ctx) bool

	// Lower is the load at which ordinary requests start being shed; the probability grows linearly from 0 at
	// Lower to 1 at Upper.
	//
	// Optional. Default: 0.90
	Lower float64

	// Upper is the load at and above which every ordinary request is shed.
	//
	// Optional. Default: 0.95
	Upper float64

	// Critical marks a request as critical: it is shed only within [CriticalLower, CriticalUpper], a band above
	// the ordinary one, so it keeps flowing while ordinary requests are shed.
	//
	// Optional. Default: nil (no request is critical)
	Critical func(c *fiber.Ctx) bool

	// CriticalLower is the load at which critical requests start being shed. Must be at least Lower.
	//
	// Optional. Default: 0.98
	CriticalLower float64

	// CriticalUpper is the load at and above which every critical request is shed.
	//
	// Optional. Default: 1.0
	CriticalUpper float64

	// DryRun computes and counts every decision but rejects nothing, to watch the shedder before enforcing it: a
	// request it would reject is counted as rejected (in Status and the metrics) and served.
	//
	// Optional. Default: false
	DryRun bool

	// Signal is the load measurement. Implement Signal for memory, queue time or any other resource.
	//
	// Optional. Default: DefaultSignal(CPUs), a Settled over the utilisation of the CPU the process may use
	// beside its goroutines' scheduling latency and run queue: it sheds the share of requests that holds the CPU
	// at 0.97 of what the process may use, and while its goroutines queue for a CPU (waits over 7ms, or 2
	// runnable goroutines per P) it limits the requests in flight
	Signal Signal

	// CPUs overrides the number of CPUs the default CPU signal divides usage by. Ignored when Signal is set.
	//
	// Optional. Default: 0 (detected from the cgroup, else the host)
	CPUs float64

	// Interval is how often the background sampler reads Signal. Short intervals catch an overload before a
	// backlog builds; cgroup CPU counters are exact at any interval (the host-wide fallback measures over at least
	// 100ms, see CPU).
	//
	// Optional. Default: 20ms
	Interval time.Duration

	// IdleInterval is the longest the sampler waits between readings while the load stays quiet, below half of
	// Lower: each quiet reading doubles the wait, from Interval up to IdleInterval, so an idle service pays for
	// a few readings a second rather than one per Interval. A reading that is not quiet brings the wait back to
	// Interval at once, and so does a surge of requests (twice the recent rate, at least 8, within one wait).
	// Set it to Interval to read at every Interval. Must be at least Interval.
	//
	// Optional. Default: 320ms, or Interval if longer
	IdleInterval time.Duration

	// Smoothing is the weight of each new reading in the exponentially weighted moving average of the load,
	// in (0, 1]; 1 disables smoothing. The smoothed load has a memory of about Interval/Smoothing. A Settled
	// signal (the default) is not smoothed: its load moves gradually already.
	//
	// Optional. Default: 0.2 (about 100ms of memory at the default Interval)
	Smoothing float64

	// OnReject answers a request the middleware rejects. Before calling it the middleware sets the
	// Retry-After and Fiberguard-Rejected-By headers (see RetryAfter and Name).
	//
	// Optional. Default: 503 with a short text body naming the module (see ConfigDefault)
	OnReject fiber.Handler

	// RetryAfter is the Retry-After header of a rejection: whole seconds, rounded up, at least 1.
	// A negative value sends no Retry-After.
	//
	// Optional. Default: time.Second
	RetryAfter time.Duration

	// Name identifies this instance: the `name` label of every metric and the second part of the
	// Fiberguard-Rejected-By header. Instances registered on one Registerer need distinct names.
	//
	// Optional. Default: "default"
	Name string

	// Registerer receives the metrics.
	//
	// Optional. Default: nil (prometheus.DefaultRegisterer)
	Registerer prometheus.Registerer

	// DisableMetrics registers no metrics.
	//
	// Optional. Default: false
	DisableMetrics bool

	// Context stops the background work when done, as Close does: the sampler stops and the middleware keeps
	// the last load, and the metrics are unregistered.
	//
	// Optional. Default: nil (runs until Close)
	Context context.Context
}

// ConfigDefault is the default config.
var ConfigDefault = Config{
	Next:          nil,
	Lower:         0.90,
	Upper:         0.95,
	CriticalLower: 0.98,
	CriticalUpper: 1.0,
	Interval:      20 * time.Millisecond,
	IdleInterval:  320 * time.Millisecond,
	Smoothing:     0.2,
	OnReject: func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusServiceUnavailable).SendString("loadshed: overloaded, retry later\n")
	},
	RetryAfter: time.Second,
	Name:       "default",
}

// configDefault fills the zero fields of the first config from ConfigDefault (the rules are the core's: the
// critical band follows a custom Upper).
func configDefault(config ...Config) Config {
	if len(config) == 0 {
		return ConfigDefault
	}
	cfg := config[0]
	d := cfg.core().WithDefaults(ConfigDefault.core())
	cfg.Lower, cfg.Upper, cfg.CriticalLower, cfg.CriticalUpper = d.Lower, d.Upper, d.CriticalLower, d.CriticalUpper
	cfg.Interval, cfg.IdleInterval, cfg.Smoothing = d.Interval, d.IdleInterval, d.Smoothing
	cfg.RetryAfter, cfg.Name = d.RetryAfter, d.Name
	if cfg.OnReject == nil {
		cfg.OnReject = ConfigDefault.OnReject
	}
	return cfg
}

// validate panics, naming the field, on the first invalid value of a config filled by configDefault.
func (cfg Config) validate() {
	cfg.core().Validate()
	if cfg.OnReject == nil {
		panic("loadshed: Config.OnReject must not be nil")
	}
}

// core is the part of the config the engine takes: every field without a Fiber type.
func (cfg Config) core() core.Config {
	return core.Config{
		Lower:          cfg.Lower,
		Upper:          cfg.Upper,
		CriticalLower:  cfg.CriticalLower,
		CriticalUpper:  cfg.CriticalUpper,
		DryRun:         cfg.DryRun,
		Signal:         cfg.Signal,
		CPUs:           cfg.CPUs,
		Interval:       cfg.Interval,
		IdleInterval:   cfg.IdleInterval,
		Smoothing:      cfg.Smoothing,
		RetryAfter:     cfg.RetryAfter,
		Name:           cfg.Name,
		Registerer:     cfg.Registerer,
		DisableMetrics: cfg.DisableMetrics,
		Context:        cfg.Context,
		Logger:         fiberLog{},
	}
}
