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
	// count connection failures, and one set here replaces Config.Dial for that upstream's requests (health
	// dials keep Config.Dial).
	//
	// Optional. Default: nil
	ConfigureClient func(server string, c *fasthttp.HostClient)

	// LookupHost resolves an upstream's host name before a health dial, so name resolution is never part of
	// the measured connect time.
	//
	// Optional. Default: nil (net.DefaultResolver.LookupHost)
	LookupHost func(ctx context.Context, host string) (addrs []string, err error)

	// Dial opens a connection to addr ("host:port") for health dials and requests. A health dial passes the
	// address LookupHost returned and a ctx bounded by HealthTimeout, and closes the connection at once; its
	// connect-time sample is the time Dial took (with the default dialer on Linux, the TCP handshake's round
	// trip as the kernel timed it when that is shorter, so a busy process does not inflate it). A request's dial
	// passes the configured host and a ctx bounded by the dial timeout; TLS, for https upstreams, is layered over
	// the connection returned. A Dial or DialTimeout set by ConfigureClient takes precedence for requests.
	//
	// Optional. Default: nil (a net.Dialer over TCP)
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	// OnReject answers a request the middleware rejects. Before calling it the middleware sets the
	// Retry-After and Fiberguard-Rejected-By headers (see RetryAfter and Name). Handler rejects a request when
	// no upstream can take it (every one is unhealthy or draining); LBClient cannot call it and returns
	// ErrNoUpstream instead.
	//
	// Optional. Default: 503 with the body "upstreampick: no upstream available\n" (see ConfigDefault)
	OnReject fiber.Handler

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

	// Context stops the background work when done, as Close does.
	//
	// Optional. Default: nil (runs until Close)
	Context context.Context
}

// ConfigDefault is the default config. Servers has no default.
var ConfigDefault = Config{
	Mode:           ModeLatency,
	HealthInterval: time.Second,
	DrainTimeout:   30 * time.Second,
	Timeout:        fasthttp.DefaultLBClientTimeout,
	Retries:        2,
	OnReject: func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusServiceUnavailable).SendString("upstreampick: no upstream available\n")
	},
	RetryAfter: time.Second,
	Name:       "default",
}

// configDefault fills the zero fields of the given config from ConfigDefault.
func configDefault(config ...Config) Config {
	if len(config) == 0 {
		return ConfigDefault
	}
	cfg := config[0]
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
	if cfg.OnReject == nil {
		cfg.OnReject = ConfigDefault.OnReject
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = ConfigDefault.RetryAfter
	}
	if cfg.Name == "" {
		cfg.Name = ConfigDefault.Name
	}
	return cfg
}

// validate panics, naming the field, when cfg (filled by configDefault) is invalid.
func (cfg Config) validate() {
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
	case !headerSafe(cfg.Name):
		panic("upstreampick: Config.Name must not contain control characters")
	}
	if _, err := parseServers(cfg.Servers); err != nil {
		panic("upstreampick: Config.Servers: " + err.Error())
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
