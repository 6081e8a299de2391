package throttle

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Signal is one backpressure signal feeding the window: a PromQL query evaluated against Config.PrometheusURL,
// or a Go function evaluated in process. Exactly one of Query and Func is set.
type Signal struct {
	// Name identifies the signal in metrics ("signal" label), logs and Snapshot. It comes from configuration
	// only, never from requests.
	//
	// Optional. Default: "query_<i>" for Config.Queries[i], "signal_<i>" for Config.Signals[i]
	Name string

	// Query is a PromQL instant query. It fires when it returns a vector with at least one non-zero sample or
	// a non-zero scalar: write `x > 0.5` (an empty vector when false) or `x > bool 0.5` (a 0 sample when false).
	Query string

	// Func is an in-process signal, for example a local queue length: it reports whether the signal fires.
	// It is called from the signal's own goroutine with a context carrying Timeout; an error is handled like a
	// failed query (the last value is kept for Staleness, then the fail mode applies).
	Func func(ctx context.Context) (firing bool, err error)

	// Interval overrides Config.Interval for this signal.
	//
	// Optional. Default: Config.Interval
	Interval time.Duration

	// Timeout overrides Config.Timeout for this signal.
	//
	// Optional. Default: Config.Timeout
	Timeout time.Duration
}

// problem describes what is wrong with the signal configured as field (e.g. "Config.Signals[2]"), or returns
// "" when nothing is. hasURL tells whether Config.PrometheusURL is set. Config.validate panics with it.
func (s Signal) problem(field string, hasURL bool) string {
	switch {
	case s.Func == nil && strings.TrimSpace(s.Query) == "":
		return field + ".Query must not be empty (or set " + field + ".Func)"
	case s.Func != nil && s.Query != "":
		return field + " must set only one of Query and Func"
	case s.Interval < 0:
		return fmt.Sprintf("%s.Interval must be positive, got %v", field, s.Interval)
	case s.Timeout < 0:
		return fmt.Sprintf("%s.Timeout must be positive, got %v", field, s.Timeout)
	case s.Func == nil && !hasURL:
		return "Config.PrometheusURL must be set when " + field + ".Query is given"
	}
	return ""
}

// kind is "func" for an in-process signal and "promql" for a query.
func (s Signal) kind() string {
	if s.Func != nil {
		return "func"
	}
	return "promql"
}

// signalsOf lists every configured signal with its name, cadence and timeout filled in.
func signalsOf(cfg Config) []Signal {
	out := make([]Signal, 0, len(cfg.Queries)+len(cfg.Signals))
	for i, q := range cfg.Queries {
		out = append(out, Signal{Name: "query_" + strconv.Itoa(i), Query: q})
	}
	for i, s := range cfg.Signals {
		if s.Name == "" {
			s.Name = "signal_" + strconv.Itoa(i)
		}
		out = append(out, s)
	}
	for i := range out {
		s := &out[i]
		if s.Interval == 0 {
			s.Interval = cfg.Interval
		}
		if s.Timeout == 0 {
			s.Timeout = cfg.Timeout
			if s.Timeout == 0 {
				s.Timeout = min(ConfigDefault.Timeout, s.Interval)
			}
		}
	}
	return out
}

// staleness is the staleness period of a signal.
func staleness(cfg Config, s Signal) time.Duration {
	if cfg.Staleness > 0 {
		return cfg.Staleness
	}
	return 4 * s.Interval
}
