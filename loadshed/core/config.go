package core

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the settings of an Engine: the fields of the adapters' Config that have no Fiber type, with the
// same names and meanings (the adapters document each, with its default). Zero fields take their value from
// WithDefaults; NewEngine uses the config as given.
type Config struct {
	// Ordinary requests are shed with a probability growing linearly from 0 at Lower to 1 at Upper; critical
	// ones likewise over [CriticalLower, CriticalUpper], with CriticalLower at least Lower.
	Lower, Upper                 float64
	CriticalLower, CriticalUpper float64

	// DryRun counts every decision but makes Admit admit everything.
	DryRun bool

	// Signal is the load measurement; nil means DefaultSignal(CPUs). CPUs > 0 overrides the CPU capacity the
	// default signal detects.
	Signal Signal
	CPUs   float64

	// Interval is how often the sampler reads Signal; Smoothing, in (0, 1], is the weight of each new reading
	// in the moving average of the load (1: none). A Settled signal is not smoothed.
	Interval  time.Duration
	Smoothing float64

	// IdleInterval, at least Interval, is the longest the sampler waits between readings while the load stays
	// quiet (below half of Lower): each quiet reading doubles the wait, from Interval up to IdleInterval. A
	// reading that is not quiet, or twice the recent request rate, brings it back to Interval at once.
	// IdleInterval equal to Interval reads at every Interval.
	IdleInterval time.Duration

	// RetryAfter gives the Retry-After header of a rejection (whole seconds, rounded up, at least 1; none when
	// negative); Name gives Fiberguard-Rejected-By (loadshed/<Name>) and the `name` label of the metrics.
	RetryAfter time.Duration
	Name       string

	// Registerer receives the metrics (nil: prometheus.DefaultRegisterer) unless DisableMetrics is set.
	Registerer     prometheus.Registerer
	DisableMetrics bool

	// Context, when done, ends the engine as Close does: the sampler stops and the metrics are unregistered.
	Context context.Context

	// Logger receives what the Engine says at start (what the load is read from) and the sampler's errors; the
	// adapters pass their Fiber version's log package. Nil means the standard library's log package.
	Logger Logger
}

// Logger is where an Engine logs.
type Logger interface {
	Infof(format string, v ...any)
	Warnf(format string, v ...any)
}

// WithDefaults fills the zero fields of c from d (an adapter's ConfigDefault). The critical band follows a custom
// Upper: it starts no lower than Upper and keeps a width where the default one would be empty.
func (c Config) WithDefaults(d Config) Config {
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
	return c
}

// Validate panics, naming the field, on the first invalid value of a config filled by WithDefaults.
func (c Config) Validate() {
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
	case strings.ContainsFunc(c.Name, unicode.IsControl):
		panic(fmt.Sprintf("loadshed: Config.Name must have no control characters (it is sent in a header), got %q", c.Name))
	}
}
