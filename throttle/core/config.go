package core

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the settings of an Engine: the fields of the adapters' Config that have no Fiber type, with the
// same names and meanings (the adapters document each, with its default). Zero fields take their value from
// WithDefaults; NewEngine uses the config as given.
type Config struct {
	// PrometheusURL is the base address of the Prometheus HTTP API the PromQL triggers are evaluated against.
	PrometheusURL string

	// Queries are PromQL triggers named "query_<index>"; Triggers are named PromQL or in-process triggers.
	Queries  []string
	Triggers []Trigger

	// Interval is how often each trigger is evaluated, Timeout bounds each evaluation (zero: the default
	// timeout, or the trigger's interval if shorter), and Staleness is how long a failing trigger keeps its last
	// value (zero: 4 × the trigger's interval) before FailMode decides it.
	Interval  time.Duration
	Timeout   time.Duration
	Staleness time.Duration
	FailMode  FailMode

	// WindowMin is the smallest window and the first one; WindowMax the largest.
	WindowMin int
	WindowMax int

	// RetryAfter gives the Retry-After header of a rejection (whole seconds, rounded up, at least 1; none when
	// negative); Name gives Fiberguard-Rejected-By (throttle/<Name>) and the `name` label of the metrics.
	RetryAfter time.Duration

	// RoundTripper carries the Prometheus API requests; nil means a transport of the Engine's own.
	RoundTripper http.RoundTripper

	Name string

	// Registerer receives the metrics (nil: prometheus.DefaultRegisterer) unless DisableMetrics is set.
	Registerer     prometheus.Registerer
	DisableMetrics bool

	// Context, when done, closes the Engine as Close does.
	Context context.Context

	// Logger receives what the trigger goroutines report (a new error, a recovery, an invalid query) and the
	// metrics' registration failures; the adapters pass their Fiber version's log package. Nil means the
	// standard library's log package.
	Logger Logger

	// defaultTimeout is the Timeout of WithDefaults' defaults: the cap of a trigger's timeout when Timeout is 0.
	defaultTimeout time.Duration
}

// DefaultTimeout caps the timeout of a trigger when neither the trigger nor the Config sets one and the Config
// did not go through WithDefaults.
const DefaultTimeout = 5 * time.Second

// Logger is where an Engine logs.
type Logger interface {
	Infof(format string, v ...any)
	Warnf(format string, v ...any)
	Errorf(format string, v ...any)
}

// WithDefaults fills the zero fields of c from d (an adapter's ConfigDefault). Timeout stays zero: each trigger
// then takes d.Timeout, or its own interval if shorter. The window bounds follow each other: a WindowMax below
// the default WindowMin is also the minimum, and a WindowMin above the default WindowMax is also the maximum.
func (c Config) WithDefaults(d Config) Config {
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
	c.defaultTimeout = d.Timeout
	return c
}

// Validate panics on the first invalid field of a config filled by WithDefaults, naming it:
// "throttle: Config.<Field> must be ...".
func (c Config) Validate() {
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

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
