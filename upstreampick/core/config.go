package core

import (
	"context"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Config is the framework-free part of an adapter's Config. Each field means what the adapter's field of the
// same name means (see the adapter's documentation); NoUpstream and Warnf are the adapter's own. An adapter
// fills it with Fill from its ConfigDefault, then passes it to New.
type Config struct {
	Servers         []string
	Discover        []Discovery
	Mode            Mode
	HealthInterval  time.Duration
	HealthTimeout   time.Duration
	DrainTimeout    time.Duration
	Timeout         time.Duration
	Retries         int
	ConfigureClient func(server string, c *fasthttp.HostClient)
	Resolver        Resolver
	LookupHost      func(ctx context.Context, host string) (addrs []string, err error)
	Dial            func(ctx context.Context, addr string) (net.Conn, error)
	RetryAfter      time.Duration
	Name            string
	Registerer      prometheus.Registerer
	DisableMetrics  bool
	Context         context.Context

	// NoUpstream is the error LBClient and BalancingClient return when no upstream can take a request: the
	// adapter's ErrNoUpstream, a 503 error of its Fiber version. Nil: an error of the same text.
	NoUpstream error

	// Warnf logs a warning (metrics that could not be registered): the adapter's Fiber logger. Nil: the
	// standard log package.
	Warnf func(format string, v ...any)
}

// Fill returns cfg with its zero fields taken from def (an adapter's ConfigDefault). A zero HealthTimeout is
// half the HealthInterval; a zero Retries is def's and a negative one becomes 0: no retries.
func (cfg Config) Fill(def Config) Config {
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = def.HealthInterval
	}
	if cfg.HealthTimeout == 0 {
		cfg.HealthTimeout = cfg.HealthInterval / 2
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = def.DrainTimeout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = def.Timeout
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = def.Retries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = def.RetryAfter
	}
	if cfg.Name == "" {
		cfg.Name = def.Name
	}
	return cfg
}

// Validate panics, naming the field, when cfg (filled by Fill) is invalid.
func (cfg Config) Validate() {
	switch {
	case len(cfg.Servers) == 0 && len(cfg.Discover) == 0:
		panic("upstreampick: Config.Servers must list at least one server, or Config.Discover a name")
	case cfg.Mode < ModeLatency || cfg.Mode > ModeRandom:
		panic("upstreampick: Config.Mode must be ModeLatency, ModeLeastPending or ModeRandom")
	case cfg.HealthInterval < 0:
		panic("upstreampick: Config.HealthInterval must be positive")
	case cfg.HealthTimeout < 0 || cfg.HealthTimeout >= cfg.HealthInterval:
		panic("upstreampick: Config.HealthTimeout must be positive and shorter than Config.HealthInterval")
	case cfg.DrainTimeout < 0:
		panic("upstreampick: Config.DrainTimeout must be positive")
	case cfg.Timeout < 0:
		panic("upstreampick: Config.Timeout must be positive")
	case !headerSafe(cfg.Name):
		panic("upstreampick: Config.Name must not contain control characters")
	}
	if _, err := parseServers(cfg.Servers); err != nil {
		panic("upstreampick: Config.Servers: " + err.Error())
	}
	if why := validateDiscover(cfg.Discover); why != "" {
		panic("upstreampick: " + why)
	}
}

// headerSafe reports whether s can be sent in a header value as is.
func headerSafe(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
