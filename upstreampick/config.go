package upstreampick

import (
	"context"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Config defines the config for a Picker.
type Config struct {
	// Next defines a function to skip the Handler when it returns true. It plays no part in LBClient, where
	// proxy.Config.Next does the same.
	//
	// Optional. Default: nil
	Next func(c *fiber.Ctx) bool

	// Servers lists the upstreams, as "http://host:port", "https://host:port" or "host:port" (http). With a
	// scheme the port may be left out for the scheme's default (80 or 443); "host" alone is rejected. A host
	// is a name or an IP address ("[::1]:8080"); names are never resolved here, so "localhost:80" and
	// "127.0.0.1:80" are two servers. One server listed twice, in any spelling ("127.0.0.1:80",
	// "http://127.0.0.1", "HTTP://127.0.0.1:80/"), is rejected. The list can be replaced at run time with
	// Picker.SetServers.
	//
	// Required.
	Servers []string

	// Mode selects how an upstream is picked: ModeLatency (random inside the nearest tier), ModeLeastPending
	// (power of two choices inside the nearest tier) or ModeRandom (ignores latency).
	//
	// Optional. Default: ModeLatency
	Mode Mode

	// HealthInterval is the time between two health rounds. Each round dials every upstream once (TCP connect
	// only) and folds the connect time into its average.
	//
	// Optional. Default: 1 * time.Second
	HealthInterval time.Duration

	// HealthTimeout bounds one health dial, and separately the name resolution before it. It must be shorter
	// than HealthInterval. A dial that times out is a failure.
	//
	// Optional. Default: HealthInterval / 2
	HealthTimeout time.Duration

	// DrainTimeout bounds how long an upstream removed by SetServers waits for its requests in flight before it
	// is forgotten. It gets no new requests meanwhile.
	//
	// Optional. Default: 30 * time.Second
	DrainTimeout time.Duration

	// Timeout is the request timeout of the LBClient and the Handler (fasthttp.LBClient.Timeout).
	//
	// Optional. Default: fasthttp.DefaultLBClientTimeout (1 * time.Second)
	Timeout time.Duration

	// Retries is how many more upstreams a request may try after a connection to its upstream could not be
	// established. Nothing was sent then, so a retry is safe for every method. 0 uses the default; a negative
	// value disables retries.
	//
	// Optional. Default: 2
	Retries int

	// ConfigureClient, when set, adjusts each upstream's fasthttp.HostClient before first use (buffer sizes,
	// TLSConfig, MaxConns, ...). Addr and IsTLS are set from the server; Dial and DialTimeout are wrapped to
	// count connection failures, so set DialTimeout here to change how connections are made.
	//
	// Optional. Default: nil
	ConfigureClient func(server string, c *fasthttp.HostClient)

	// LookupHost resolves an upstream's host name before a health dial, so name resolution is never part of
	// the measured connect time.
	//
	// Optional. Default: net.DefaultResolver.LookupHost
	LookupHost func(ctx context.Context, host string) (addrs []string, err error)

	// Registerer receives the fiberguard_upstreampick_* metrics. A duplicate registration (a second Picker of
	// the same Name on the same registry) is logged and skipped.
	//
	// Optional. Default: prometheus.DefaultRegisterer
	Registerer prometheus.Registerer

	// Name is the value of the metrics' picker label, to tell several Pickers on one registry apart.
	//
	// Optional. Default: "default"
	Name string

	// DisableMetrics turns the metrics off.
	//
	// Optional. Default: false
	DisableMetrics bool
}

// ConfigDefault is the default config. Servers has no default.
var ConfigDefault = Config{
	Mode:           ModeLatency,
	HealthInterval: time.Second,
	DrainTimeout:   30 * time.Second,
	Timeout:        fasthttp.DefaultLBClientTimeout,
	Retries:        2,
	Name:           "default",
}

// configDefault fills the zero fields of the given config with the defaults and checks it, panicking with a
// message that names the offending field.
func configDefault(config ...Config) Config {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
	}
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = ConfigDefault.HealthInterval
	}
	if cfg.HealthTimeout == 0 {
		cfg.HealthTimeout = cfg.HealthInterval / 2
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = ConfigDefault.DrainTimeout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = ConfigDefault.Timeout
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = ConfigDefault.Retries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.LookupHost == nil {
		cfg.LookupHost = net.DefaultResolver.LookupHost
	}
	if cfg.Name == "" {
		cfg.Name = ConfigDefault.Name
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.DefaultRegisterer
	}

	switch {
	case len(cfg.Servers) == 0:
		panic("upstreampick: Config.Servers must list at least one server")
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
	}
	if _, err := parseServers(cfg.Servers); err != nil {
		panic("upstreampick: Config.Servers: " + err.Error())
	}
	return cfg
}
