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

	// Queries are PromQL backpressure triggers, each evaluated by its own goroutine every Interval. A query fires
	// when it returns at least one non-zero sample or a non-zero scalar, so both `x > 0.5` and `x > bool 0.5`
	// work. Their metric label is "query_<index>"; use Triggers to name them.
	//
	// Optional. Default: nil
	Queries []string

	// Triggers are named triggers: PromQL queries or in-process Go functions, each with optional cadence.
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

	// StatusCode is the status of the default LimitReached response.
	//
	// Optional. Default: 503
	StatusCode int

	// RetryAfter is the Retry-After header of the default LimitReached response, rounded up to whole seconds.
	// A negative value omits the header.
	//
	// Optional. Default: 1s
	RetryAfter time.Duration

	// LimitReached answers a request rejected because the window is full.
	//
	// Optional. Default: StatusCode with a Retry-After header and an empty body, written without allocating
	LimitReached fiber.Handler

	// RoundTripper carries the Prometheus API requests (add authentication or TLS here).
	//
	// Optional. Default: the client_golang API default transport
	RoundTripper http.RoundTripper

	// Registerer receives the metrics. A collector already registered under the same Name is logged and skipped.
	//
	// Optional. Default: prometheus.DefaultRegisterer
	Registerer prometheus.Registerer

	// DisableMetrics turns the Prometheus metrics off.
	//
	// Optional. Default: false
	DisableMetrics bool

	// Name tells instances apart: it is the value of the "throttle" label of every metric.
	//
	// Optional. Default: "default"
	Name string

	// Context bounds the trigger goroutines of the handler returned by New: cancel it to stop them.
	// (NewThrottler's Close stops them too.)
	//
	// Optional. Default: context.Background(), the goroutines run for the life of the process
	Context context.Context
}

// ConfigDefault is the default config.
var ConfigDefault = Config{
	Next:       nil,
	Interval:   15 * time.Second,
	Timeout:    5 * time.Second,
	FailMode:   FailOpen,
	WindowMin:  10,
	WindowMax:  1000,
	StatusCode: fiber.StatusServiceUnavailable,
	RetryAfter: time.Second,
	Name:       "default",
}

// configDefault fills the zero fields of the first config with defaults and panics on invalid values,
// naming the field.
func configDefault(config ...Config) Config {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
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
		if cfg.StatusCode == 0 {
			cfg.StatusCode = ConfigDefault.StatusCode
		}
		if cfg.RetryAfter == 0 {
			cfg.RetryAfter = ConfigDefault.RetryAfter
		}
		if cfg.Name == "" {
			cfg.Name = ConfigDefault.Name
		}
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.DefaultRegisterer
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	validate(cfg)
	return cfg
}

func validate(cfg Config) {
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
	case cfg.StatusCode < 100 || cfg.StatusCode > 599:
		panic(fmt.Sprintf("throttle: Config.StatusCode must be an HTTP status (100-599), got %d", cfg.StatusCode))
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
	for _, s := range triggersOf(cfg) {
		if seen[s.Name] {
			panic(fmt.Sprintf("throttle: trigger names must be unique, %q is used twice (Config.Triggers[].Name)", s.Name))
		}
		seen[s.Name] = true
	}
}
