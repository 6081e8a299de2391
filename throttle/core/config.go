package core

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config is the configuration of a throttle, generic over the framework's request context (C) and handler (H):
// an adapter's Config is Config[*fiber.Ctx, fiber.Handler] (Fiber v2) or Config[fiber.Ctx, fiber.Handler] (Fiber
// v3). An Engine reads only the fields without a framework type, so callers without one use Config[any, any].
// Zero fields take their value from WithDefaults; NewEngine uses the config as given.
type Config[C any, H any] struct {
	// Next defines a function to skip this middleware when it returns true (health checks, metrics scrapes).
	//
	// Optional. Default: nil
	Next func(c C) bool

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
	// Optional. Default: 503 with a short text body naming the module (see the adapter's ConfigDefault)
	OnReject H

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

	// defaultTimeout is the Timeout of WithDefaults' defaults: the cap of a trigger's timeout when Timeout is 0.
	defaultTimeout time.Duration
}

// Defaults returns the default config of an adapter (its ConfigDefault), with onReject as the rejection handler.
// It holds values only: no registry, context or client.
func Defaults[C, H any](onReject H) Config[C, H] {
	return Config[C, H]{
		Interval:   15 * time.Second,
		Timeout:    DefaultTimeout,
		FailMode:   FailOpen,
		WindowMin:  10,
		WindowMax:  1000,
		OnReject:   onReject,
		RetryAfter: time.Second,
		Name:       "default",
	}
}

// DefaultTimeout caps the timeout of a trigger when neither the trigger nor the Config sets one and the Config
// did not go through WithDefaults.
const DefaultTimeout = 5 * time.Second

// Logger is where an Engine logs: the adapters pass their Fiber version's log package.
type Logger interface {
	Infof(format string, v ...any)
	Warnf(format string, v ...any)
	Errorf(format string, v ...any)
}

// WithDefaults fills the zero fields of c from d (an adapter's ConfigDefault), OnReject included. Timeout stays
// zero: each trigger then takes d.Timeout, or its own interval if shorter. The window bounds follow each other: a
// WindowMax below the default WindowMin is also the minimum, and a WindowMin above the default WindowMax is also the
// maximum.
func (c Config[C, H]) WithDefaults(d Config[C, H]) Config[C, H] {
	if c.Interval == 0 {
		c.Interval = d.Interval
	}
	if c.WindowMin == 0 {
		c.WindowMin = d.WindowMin
		if c.WindowMax > 0 && c.WindowMax < c.WindowMin {
			c.WindowMin = c.WindowMax
		}
	}
	if c.WindowMax == 0 {
		c.WindowMax = max(d.WindowMax, c.WindowMin)
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = d.RetryAfter
	}
	if c.Name == "" {
		c.Name = d.Name
	}
	if isNil(c.OnReject) {
		c.OnReject = d.OnReject
	}
	c.defaultTimeout = d.Timeout
	return c
}

// Validate panics on the first invalid field of a config filled by WithDefaults, naming it:
// "throttle: Config.<Field> must be ...".
func (c Config[C, H]) Validate() {
	if isNil(c.OnReject) {
		panic("throttle: Config.OnReject must not be nil")
	}
	c.validateEngine()
}

// validateEngine is Validate of the fields an Engine reads: every one without a framework type.
func (c Config[C, H]) validateEngine() {
	switch {
	case c.WindowMin < 1:
		panic(fmt.Sprintf("throttle: Config.WindowMin must be >= 1, got %d", c.WindowMin))
	case c.WindowMax < c.WindowMin:
		panic(fmt.Sprintf("throttle: Config.WindowMax must be >= Config.WindowMin (%d), got %d", c.WindowMin, c.WindowMax))
	case c.WindowMax > MaxWindow:
		panic(fmt.Sprintf("throttle: Config.WindowMax must be <= %d, got %d", MaxWindow, c.WindowMax))
	case c.Interval <= 0: // zero only reaches here without WithDefaults
		panic(fmt.Sprintf("throttle: Config.Interval must be positive, got %v", c.Interval))
	case c.Timeout < 0:
		panic(fmt.Sprintf("throttle: Config.Timeout must be positive, got %v", c.Timeout))
	case c.Staleness < 0:
		panic(fmt.Sprintf("throttle: Config.Staleness must be positive, got %v", c.Staleness))
	case c.FailMode != FailOpen && c.FailMode != FailClosed:
		panic(fmt.Sprintf("throttle: Config.FailMode must be FailOpen or FailClosed, got %d", c.FailMode))
	case strings.ContainsFunc(c.Name, isControl):
		panic(fmt.Sprintf("throttle: Config.Name must not contain control characters (it is sent in a header), got %q", c.Name))
	}
	if c.PrometheusURL != "" {
		u, err := url.Parse(c.PrometheusURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			panic(fmt.Sprintf("throttle: Config.PrometheusURL must be an http(s) URL such as http://127.0.0.1:9090, got %q", c.PrometheusURL))
		}
	}
	for i, q := range c.Queries {
		if strings.TrimSpace(q) == "" {
			panic(fmt.Sprintf("throttle: Config.Queries[%d] must not be empty", i))
		}
	}
	for i, s := range c.Triggers {
		if p := s.problem("Config.Triggers["+strconv.Itoa(i)+"]", c.PrometheusURL != ""); p != "" {
			panic("throttle: " + p)
		}
	}
	if c.PrometheusURL == "" && len(c.Queries) > 0 {
		panic("throttle: Config.PrometheusURL must be set when Config.Queries are given")
	}
	seen := map[string]bool{}
	for i, s := range triggersOf(c) {
		if seen[s.Name] { // Queries' names are distinct, so the second use is one of Triggers
			panic(fmt.Sprintf("throttle: Config.Triggers[%d].Name must be unique, %q is used twice", i-len(c.Queries), s.Name))
		}
		seen[s.Name] = true
	}
}

// isNil reports whether v (a handler of a type the core does not know) is nil.
func isNil[T any](v T) bool {
	r := reflect.ValueOf(&v).Elem()
	switch r.Kind() {
	case reflect.Interface:
		// A handler interface holding a nil func (http.HandlerFunc(nil)) would panic when called: nil too.
		return r.IsNil() || r.Elem().Kind() == reflect.Func && r.Elem().IsNil()
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan:
		return r.IsNil()
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
