package loadshed

import (
	"context"
	"fmt"
	"math"
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

	// DryRun computes and counts every decision but rejects nothing, to watch the shedder before enforcing it.
	//
	// Optional. Default: false
	DryRun bool

	// Signal is the load measurement. Implement Signal for memory, queue time or any other resource.
	//
	// Optional. Default: NewCPU(CPUs), the CPU the process may use (its cgroup's limit, else the host's)
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

	// Smoothing is the weight of each new reading in the exponentially weighted moving average of the load,
	// in (0, 1]; 1 disables smoothing. The smoothed load has a memory of about Interval/Smoothing.
	//
	// Optional. Default: 0.2 (about 100ms of memory at the default Interval)
	Smoothing float64

	// OnShed answers a rejected request.
	//
	// Optional. Default: 503 Service Unavailable with a Retry-After header, written without allocating
	OnShed fiber.Handler

	// RetryAfter is the Retry-After header of the default OnShed, rounded up to whole seconds. A negative value
	// omits the header.
	//
	// Optional. Default: 1s
	RetryAfter time.Duration

	// Registerer receives the metrics. A collector already registered under the same Name is logged and skipped.
	//
	// Optional. Default: prometheus.DefaultRegisterer
	Registerer prometheus.Registerer

	// DisableMetrics turns the Prometheus metrics off.
	//
	// Optional. Default: false
	DisableMetrics bool

	// Name tells instances apart: it is the value of the "shedder" label of every metric.
	//
	// Optional. Default: "default"
	Name string

	// Context bounds the background sampler of the handler returned by New: cancel it to stop the sampler.
	// (NewShedder's Close stops it too.)
	//
	// Optional. Default: context.Background(), the sampler runs for the life of the process
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
	Smoothing:     0.2,
	RetryAfter:    time.Second,
	Name:          "default",
}

// configDefault fills the zero fields of the first config with defaults and panics on invalid values.
func configDefault(config ...Config) Config {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
		if cfg.Lower == 0 {
			cfg.Lower = ConfigDefault.Lower
		}
		if cfg.Upper == 0 {
			cfg.Upper = ConfigDefault.Upper
		}
		if cfg.CriticalLower == 0 {
			cfg.CriticalLower = math.Max(ConfigDefault.CriticalLower, cfg.Upper)
		}
		if cfg.CriticalUpper == 0 {
			cfg.CriticalUpper = ConfigDefault.CriticalUpper
			if cfg.CriticalUpper <= cfg.CriticalLower {
				cfg.CriticalUpper = cfg.CriticalLower + (cfg.Upper - cfg.Lower)
			}
		}
		if cfg.Interval == 0 {
			cfg.Interval = ConfigDefault.Interval
		}
		if cfg.Smoothing == 0 {
			cfg.Smoothing = ConfigDefault.Smoothing
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
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(cfg.Lower) || cfg.Lower < 0:
		panic(fmt.Sprintf("loadshed: Config.Lower must be a finite number >= 0, got %v", cfg.Lower))
	case !finite(cfg.Upper) || cfg.Upper <= cfg.Lower:
		panic(fmt.Sprintf("loadshed: Config.Upper must be greater than Config.Lower (%v), got %v", cfg.Lower, cfg.Upper))
	case !finite(cfg.CriticalLower) || cfg.CriticalLower < cfg.Lower:
		panic(fmt.Sprintf("loadshed: Config.CriticalLower must be at least Config.Lower (%v), got %v", cfg.Lower, cfg.CriticalLower))
	case !finite(cfg.CriticalUpper) || cfg.CriticalUpper <= cfg.CriticalLower:
		panic(fmt.Sprintf("loadshed: Config.CriticalUpper must be greater than Config.CriticalLower (%v), got %v", cfg.CriticalLower, cfg.CriticalUpper))
	case cfg.Interval < 0:
		panic(fmt.Sprintf("loadshed: Config.Interval must be positive, got %v", cfg.Interval))
	case !finite(cfg.Smoothing) || cfg.Smoothing <= 0 || cfg.Smoothing > 1:
		panic(fmt.Sprintf("loadshed: Config.Smoothing must be in (0, 1], got %v", cfg.Smoothing))
	case !finite(cfg.CPUs) || cfg.CPUs < 0:
		panic(fmt.Sprintf("loadshed: Config.CPUs must be >= 0, got %v", cfg.CPUs))
	}
}
