package core

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Trigger is one input of the window. A trigger is a backpressure signal: a PromQL query or a func that fires or
// not. The query is evaluated against Config.PrometheusURL, the func in process. Exactly one of Query and Func
// is set.
type Trigger struct {
	// Name identifies the trigger in metrics ("trigger" label), logs and Status. It comes from configuration
	// only, never from requests.
	//
	// Optional. Default: "query_<i>" for Config.Queries[i], "trigger_<i>" for Config.Triggers[i]
	Name string

	// Query is a PromQL instant query. It fires when it returns a vector with at least one non-zero sample or
	// a non-zero scalar: write `x > 0.5` (an empty vector when false) or `x > bool 0.5` (a 0 sample when false).
	//
	// Required, unless Func is set.
	Query string

	// Func is an in-process trigger, for example a local queue length: it reports whether the trigger fires.
	// It is called from the trigger's own goroutine with a context carrying Timeout; an error is handled like a
	// failed query (the last value is kept for Staleness, then the fail mode applies). It must return when its
	// context is done.
	//
	// Required, unless Query is set.
	Func func(ctx context.Context) (firing bool, err error)

	// Interval overrides Config.Interval for this trigger.
	//
	// Optional. Default: Config.Interval
	Interval time.Duration

	// Timeout overrides Config.Timeout for this trigger.
	//
	// Optional. Default: Config.Timeout
	Timeout time.Duration
}

// problem describes what is wrong with the trigger configured as field (e.g. "Config.Triggers[2]"), or returns
// "" when nothing is. hasURL tells whether Config.PrometheusURL is set. Config.Validate panics with it.
func (s Trigger) problem(field string, hasURL bool) string {
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

// kind is "func" for an in-process trigger and "promql" for a query.
func (s Trigger) kind() string {
	if s.Func != nil {
		return "func"
	}
	return "promql"
}

// triggersOf lists every configured trigger with its name, cadence and timeout filled in.
func triggersOf[C, H any](cfg Config[C, H]) []Trigger {
	out := make([]Trigger, 0, len(cfg.Queries)+len(cfg.Triggers))
	for i, q := range cfg.Queries {
		out = append(out, Trigger{Name: "query_" + strconv.Itoa(i), Query: q})
	}
	for i, s := range cfg.Triggers {
		if s.Name == "" {
			s.Name = "trigger_" + strconv.Itoa(i)
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
				s.Timeout = min(cmp.Or(cfg.defaultTimeout, DefaultTimeout), s.Interval)
			}
		}
	}
	return out
}

// staleness is the staleness period of a trigger.
func staleness[C, H any](cfg Config[C, H], s Trigger) time.Duration {
	if cfg.Staleness > 0 {
		return cfg.Staleness
	}
	return 4 * s.Interval
}
