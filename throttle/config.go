package throttle

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Config defines the config for the middleware.
type Config struct {
	// Next defines a function to skip this middleware when it returns true (health checks, metrics scrapes).
	//
	// Optional. Default: nil
	Next func(c *fiber.Ctx) bool

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
	// not, each with its own name and optional cadence.
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
	OnReject: func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusServiceUnavailable).SendString("throttle: concurrency limit reached, retry later\n")
	},
	RetryAfter: time.Second,
	Name:       "default",
}

// configDefault returns the first config with its zero fields filled from ConfigDefault, or ConfigDefault.
func configDefault(config ...Config) Config {
	if len(config) == 0 {
		return ConfigDefault
	}
	cfg := config[0]
	if cfg.Interval == 0 {
		cfg.Interval = ConfigDefault.Interval
	}
	if cfg.WindowMin == 0 {
		cfg.WindowMin = ConfigDefault.WindowMin
		if cfg.WindowMax > 0 && cfg.WindowMax < cfg.WindowMin {
			cfg.WindowMin = cfg.WindowMax
		}
	}
	if cfg.WindowMax == 0 {
		cfg.WindowMax = max(ConfigDefault.WindowMax, cfg.WindowMin)
	}
	if cfg.OnReject == nil {
		cfg.OnReject = ConfigDefault.OnReject
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = ConfigDefault.RetryAfter
	}
	if cfg.Name == "" {
		cfg.Name = ConfigDefault.Name
	}
	return cfg
}

// validate panics on the first invalid field, naming it: "throttle: Config.<Field> must be ...".
func (cfg Config) validate() {
	switch {
	case cfg.WindowMin < 1:
		panic(fmt.Sprintf("throttle: Config.WindowMin must be >= 1, got %d", cfg.WindowMin))
	case cfg.WindowMax < cfg.WindowMin:
		panic(fmt.Sprintf("throttle: Config.WindowMax must be >= Config.WindowMin (%d), got %d", cfg.WindowMin, cfg.WindowMax))
	case cfg.WindowMax > MaxWindow:
		panic(fmt.Sprintf("throttle: Config.WindowMax must be <= %d, got %d", MaxWindow, cfg.WindowMax))
	case cfg.Interval < 0:
		panic(fmt.Sprintf("throttle: Config.Interval must be positive, got %v", cfg.Interval))
	case cfg.Timeout < 0:
		panic(fmt.Sprintf("throttle: Config.Timeout must be positive, got %v", cfg.Timeout))
	case cfg.Staleness < 0:
		panic(fmt.Sprintf("throttle: Config.Staleness must be positive, got %v", cfg.Staleness))
	case cfg.FailMode != FailOpen && cfg.FailMode != FailClosed:
		panic(fmt.Sprintf("throttle: Config.FailMode must be FailOpen or FailClosed, got %d", cfg.FailMode))
	case strings.ContainsFunc(cfg.Name, isControl):
		panic(fmt.Sprintf("throttle: Config.Name must not contain control characters (it is sent in a header), got %q", cfg.Name))
	}
	if cfg.PrometheusURL != "" {
		u, err := url.Parse(cfg.PrometheusURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			panic(fmt.Sprintf("throttle: Config.PrometheusURL must be an http(s) URL such as http://127.0.0.1:9090, got %q", cfg.PrometheusURL))
		}
	}
	for i, q := range cfg.Queries {
		if strings.TrimSpace(q) == "" {
			panic(fmt.Sprintf("throttle: Config.Queries[%d] must not be empty", i))
		}
	}
	for i, s := range cfg.Triggers {
		if p := s.problem("Config.Triggers["+strconv.Itoa(i)+"]", cfg.PrometheusURL != ""); p != "" {
			panic("throttle: " + p)
		}
	}
	if cfg.PrometheusURL == "" && len(cfg.Queries) > 0 {
		panic("throttle: Config.PrometheusURL must be set when Config.Queries are given")
	}
	seen := map[string]bool{}
	for i, s := range triggersOf(cfg) {
		if seen[s.Name] { // Queries' names are distinct, so the second use is one of Triggers
			panic(fmt.Sprintf("throttle: Config.Triggers[%d].Name must be unique, %q is used twice", i-len(cfg.Queries), s.Name))
		}
		seen[s.Name] = true
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
