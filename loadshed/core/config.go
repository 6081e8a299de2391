package core

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
)

// Config defines the config of the middleware, for any web framework: C is the framework's request context and H
// its handler type (Fiber v2's adapter uses Config[*fiber.Ctx, fiber.Handler]). Each field is documented here
// once, with its default; Defaults returns the default config, WithDefaults fills the zero fields and Validate
// checks the values.
type Config[C, H any] struct {
	// Next defines a function to skip this middleware when it returns true (health checks, metrics scrapes).
	//
	// Optional. Default: nil
	Next func(c C) bool

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
	Critical func(c C) bool

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
	// Optional. Default: DefaultSignal(CPUs), a Controller over the utilisation of the CPU the process may use
	// beside its goroutines' scheduling latency and run queue: it sheds the share of requests that holds the CPU
	// at 0.97 of what the process may use, and while its goroutines queue for a CPU (waits over 7ms, or 2
	// runnable goroutines per P) it limits the requests in flight
	Signal Signal

	// CPUs overrides the number of CPUs the default CPU signal divides usage by. Ignored when Signal is set.
	//
	// Optional. Default: 0 (detected from the cgroup, else the host)
	CPUs float64

	// Target is the share of the CPU the process may use that the default signal holds it at while it sheds:
	// lower trades goodput for latency (fewer admitted requests wait for a CPU), higher the other way. In (0, 1].
	// Ignored when Signal is set.
	//
	// Optional. Default: 0.97 (DefaultControlTarget)
	Target float64

	// Interval is how often the background sampler reads Signal. Short intervals catch an overload before a
	// backlog builds; cgroup CPU counters are exact at any interval (the host-wide fallback measures over at least
	// 100ms, see CPU).
	//
	// Optional. Default: 20ms
	Interval time.Duration

	// IdleInterval is the longest the sampler waits between readings while the load stays quiet, below half of
	// Lower: each quiet reading doubles the wait, from Interval up to IdleInterval, so an idle service pays for
	// a few readings a second rather than one per Interval. A reading that is not quiet brings the wait back to
	// Interval at once, and so does a surge of requests (more than twice the rate of the previous wait, at least
	// 8): the requests take a reading themselves once twice what the last rate brings in two Intervals have come,
	// as they do whenever the sampler is late. Set it to Interval to read at every Interval. Must be at least
	// Interval.
	//
	// Optional. Default: 320ms, or Interval if longer
	IdleInterval time.Duration

	// Smoothing is the weight of each new reading in the exponentially weighted moving average of the load,
	// in (0, 1]; 1 disables smoothing. The smoothed load has a memory of about Interval/Smoothing. A Controller
	// signal (the default) is not smoothed: its load moves gradually already.
	//
	// Optional. Default: 0.2 (about 100ms of memory at the default Interval)
	Smoothing float64

	// OnReject answers a request the middleware rejects. Before calling it the middleware sets the
	// Retry-After and Fiberguard-Rejected-By headers (see RetryAfter and Name).
	//
	// Optional. Default: 503 with the text body "loadshed: overloaded, retry later" (the adapter's ConfigDefault)
	OnReject H

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

// Logger is where an Engine logs.
type Logger interface {
	Infof(format string, v ...any)
	Warnf(format string, v ...any)
}

// Defaults returns the default config, with onReject answering rejected requests: an adapter's ConfigDefault.
func Defaults[C, H any](onReject H) Config[C, H] {
	return Config[C, H]{
		Lower:         0.90,
		Upper:         0.95,
		CriticalLower: 0.98,
		CriticalUpper: 1.0,
		Target:        DefaultControlTarget,
		Interval:      20 * time.Millisecond,
		IdleInterval:  320 * time.Millisecond,
		Smoothing:     0.2,
		OnReject:      onReject,
		RetryAfter:    time.Second,
		Name:          "default",
	}
}

// WithDefaults fills the zero fields of c from d (an adapter's ConfigDefault). The critical band follows a custom
// Upper: it starts no lower than Upper and keeps a width where the default one would be empty.
func (c Config[C, H]) WithDefaults(d Config[C, H]) Config[C, H] {
	if c.Lower == 0 {
		c.Lower = d.Lower
	}
	if c.Upper == 0 {
		c.Upper = d.Upper
	}
	if c.CriticalLower == 0 {
		c.CriticalLower = math.Max(d.CriticalLower, c.Upper)
	}
	if c.CriticalUpper == 0 {
		c.CriticalUpper = d.CriticalUpper
		if c.CriticalUpper <= c.CriticalLower {
			c.CriticalUpper = c.CriticalLower + (c.Upper - c.Lower)
		}
	}
	if c.Target == 0 {
		c.Target = d.Target
	}
	if c.Interval == 0 {
		c.Interval = d.Interval
	}
	if c.Smoothing == 0 {
		c.Smoothing = d.Smoothing
	}
	if c.IdleInterval == 0 {
		c.IdleInterval = max(d.IdleInterval, c.Interval)
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
	return c
}

// Validate panics, naming the field, on the first invalid value of a config filled by WithDefaults.
func (c Config[C, H]) Validate() {
	c.validateSettings()
	if isNil(c.OnReject) {
		panic("loadshed: Config.OnReject must not be nil")
	}
}

// validateSettings is Validate without the framework's fields: what an Engine needs.
func (c Config[C, H]) validateSettings() {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(c.Lower) || c.Lower < 0:
		panic(fmt.Sprintf("loadshed: Config.Lower must be a finite number >= 0, got %v", c.Lower))
	case !finite(c.Upper) || c.Upper <= c.Lower:
		panic(fmt.Sprintf("loadshed: Config.Upper must be greater than Config.Lower (%v), got %v", c.Lower, c.Upper))
	case !finite(c.CriticalLower) || c.CriticalLower < c.Lower:
		panic(fmt.Sprintf("loadshed: Config.CriticalLower must be at least Config.Lower (%v), got %v", c.Lower, c.CriticalLower))
	case !finite(c.CriticalUpper) || c.CriticalUpper <= c.CriticalLower:
		panic(fmt.Sprintf("loadshed: Config.CriticalUpper must be greater than Config.CriticalLower (%v), got %v", c.CriticalLower, c.CriticalUpper))
	case c.Interval <= 0:
		panic(fmt.Sprintf("loadshed: Config.Interval must be positive, got %v", c.Interval))
	case c.IdleInterval < c.Interval:
		panic(fmt.Sprintf("loadshed: Config.IdleInterval must be at least Config.Interval (%v), got %v", c.Interval, c.IdleInterval))
	case !finite(c.Smoothing) || c.Smoothing <= 0 || c.Smoothing > 1:
		panic(fmt.Sprintf("loadshed: Config.Smoothing must be in (0, 1], got %v", c.Smoothing))
	case !finite(c.CPUs) || c.CPUs < 0:
		panic(fmt.Sprintf("loadshed: Config.CPUs must be >= 0, got %v", c.CPUs))
	case !finite(c.Target) || c.Target < 0 || c.Target > 1:
		panic(fmt.Sprintf("loadshed: Config.Target must be in (0, 1], got %v", c.Target))
	case strings.ContainsFunc(c.Name, unicode.IsControl):
		panic(fmt.Sprintf("loadshed: Config.Name must have no control characters (it is sent in a header), got %q", c.Name))
	}
}

// isNil reports whether a handler of any type (a func, an interface) is nil: a type parameter cannot be compared
// with nil.
func isNil[H any](h H) bool {
	v := reflect.ValueOf(&h).Elem()
	switch v.Kind() {
	case reflect.Interface:
		// A handler interface holding a nil func (http.HandlerFunc(nil)) would panic when called: nil too.
		return v.IsNil() || v.Elem().Kind() == reflect.Func && v.Elem().IsNil()
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
}
