package throttle

import (
	"context"
	"net/http"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// Config defines the config for the middleware.
type Config struct {
	// Next defines a function to skip this middleware when it returns true (health checks, metrics scrapes).
	//
	// Optional. Default: nil
	Next func(c fiber.Ctx) bool

	// PrometheusURL is the base address of the Prometheus HTTP API that Queries are evaluated against, for
	// example "http://prometheus:9090". Required when a PromQL trigger is configured.
	//
	// Optional. Default: ""
	PrometheusURL string

	// Queries are PromQL triggers, shorthand for Triggers with only a Query: each is evaluated by its own
	// goroutine every Interval. A query fires when it returns at least one non-zero sample or a non-zero scalar,
	// so both `x > 0.5` and `x > bool 0.5` work. Their names (the "trigger" label of the metrics) are
	// "query_<index>"; use Triggers to name them.
	//
	// Optional. Default: nil
	Queries []string

	// Triggers are the backpressure signals steering the window: PromQL queries or in-process funcs that fire or
	// not, each with its own name and optional cadence. With neither Triggers nor Queries nothing can make the
	// window back off: it grows to WindowMax and stays there, a fixed concurrency limit. New accepts that (it is
	// a use, if a rare one) and logs a warning naming the throttle.
	//
	// Optional. Default: nil
	Triggers []Trigger

	// Interval is how often each trigger is evaluated; the first evaluation happens when the throttle starts.
	// The default matches the most common Prometheus scrape interval: evaluating faster only re-reads the same
	// samples, and since every firing evaluation halves the window, it would halve several times for one
	// observation of the backend.
	//
	// Optional. Default: 15s
	Interval time.Duration

	// Timeout bounds each evaluation (through its context). An evaluation still running at the next tick
	// delays that tick: a trigger never has two evaluations in flight.
	//
	// Optional. Default: 5s, or the trigger's Interval if shorter
	Timeout time.Duration

	// Staleness is how long a trigger whose evaluations fail keeps its last successful value before FailMode
	// decides it.
	//
	// Optional. Default: 4 × the trigger's Interval (1 minute at the default Interval)
	Staleness time.Duration

	// FailMode is the state of a trigger that has been failing for Staleness: FailOpen (not firing) or
	// FailClosed (firing, so the window backs off towards WindowMin). It decides errors that may pass only: a
	// query Prometheus rejects as invalid (bad_data) fires in neither mode; it is reported as invalid instead.
	//
	// Optional. Default: FailOpen
	FailMode FailMode

	// WindowMin is the smallest window and the one the throttle starts with. At least 1.
	//
	// Optional. Default: 10 (or WindowMax if smaller)
	WindowMin int

	// WindowMax is the largest window. At least WindowMin and at most MaxWindow.
	//
	// Optional. Default: 1000 (or WindowMin if larger)
	WindowMax int

	// OnReject answers a request the middleware rejects because the window is full. Before calling it the
	// middleware sets the Retry-After and Fiberguard-Rejected-By headers (see RetryAfter and Name).
	//
	// Optional. Default: 503 with a short text body naming the module (see ConfigDefault)
	OnReject fiber.Handler

	// RetryAfter is the Retry-After header of a rejection: whole seconds, rounded up, at least 1.
	// A negative value sends no Retry-After.
	//
	// Optional. Default: time.Second
	RetryAfter time.Duration

	// RoundTripper carries the Prometheus API requests (add authentication or TLS here).
	//
	// Optional. Default: nil (the Prometheus client's default transport)
	RoundTripper http.RoundTripper

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

	// Context stops the background work when done, as Close does: the trigger goroutines of New's handler
	// (which has no Close) run until it is done.
	//
	// Optional. Default: nil (runs until Close)
	Context context.Context
}

// ConfigDefault is the default config.
var ConfigDefault = Config{
	Next:      nil,
	Interval:  15 * time.Second,
	Timeout:   5 * time.Second,
	FailMode:  FailOpen,
	WindowMin: 10,
	WindowMax: 1000,
	OnReject: func(c fiber.Ctx) error {
		return c.Status(fiber.StatusServiceUnavailable).SendString("throttle: concurrency limit reached, retry later\n")
	},
	RetryAfter: time.Second,
	Name:       "default",
}

// configDefault returns the first config with its zero fields filled from ConfigDefault, or ConfigDefault. The
// rules are the core's: the window bounds follow each other, and Timeout stays zero (each trigger then takes
// ConfigDefault.Timeout, or its own Interval if shorter).
func configDefault(config ...Config) Config {
	if len(config) == 0 {
		return ConfigDefault
	}
	cfg := config[0]
	d := cfg.core().WithDefaults(ConfigDefault.core())
	cfg.Interval, cfg.WindowMin, cfg.WindowMax, cfg.RetryAfter, cfg.Name = d.Interval, d.WindowMin, d.WindowMax, d.RetryAfter, d.Name
	if cfg.OnReject == nil {
		cfg.OnReject = ConfigDefault.OnReject
	}
	return cfg
}

// validate panics on the first invalid field, naming it: "throttle: Config.<Field> must be ...". Every field it
// checks is the core's.
func (cfg Config) validate() { cfg.core().Validate() }

// core is the part of the config the engine takes: every field without a Fiber type.
func (cfg Config) core() core.Config {
	return core.Config{
		PrometheusURL:  cfg.PrometheusURL,
		Queries:        cfg.Queries,
		Triggers:       cfg.Triggers,
		Interval:       cfg.Interval,
		Timeout:        cfg.Timeout,
		Staleness:      cfg.Staleness,
		FailMode:       cfg.FailMode,
		WindowMin:      cfg.WindowMin,
		WindowMax:      cfg.WindowMax,
		RetryAfter:     cfg.RetryAfter,
		RoundTripper:   cfg.RoundTripper,
		Name:           cfg.Name,
		Registerer:     cfg.Registerer,
		DisableMetrics: cfg.DisableMetrics,
		Context:        cfg.Context,
		Logger:         fiberLog{},
	}
}
