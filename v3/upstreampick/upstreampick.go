// Package upstreampick sends each proxied request to one of the nearest healthy upstreams, for Fiber's
// proxy.Balancer or as a Fiber handler of its own.
//
// A health goroutine dials every upstream once per interval and keeps an exponentially weighted average of its
// TCP connect time. Upstreams are grouped into latency tiers; a request goes to an upstream picked at random
// among the healthy ones of the nearest tier, so traffic stays in the nearest site and spreads evenly inside it.
// An upstream that fails to connect twice in a row (health dial or proxied request) gets no traffic until a
// connection to it succeeds again. When no upstream can take a request, Handler rejects it through
// Config.OnReject and LBClient returns ErrNoUpstream, which an ErrorHandler answers with Picker.Reject.
//
// This package is the Fiber v3 adapter over github.com/fiberguard/fiberguard/upstreampick/core, which holds
// everything that needs neither Fiber nor fasthttp, and its fasthttp client layer (package fasthttpclient);
// github.com/fiberguard/fiberguard/upstreampick is the same for Fiber v2, with the same Config, behaviour and
// metrics.
package upstreampick

import (
	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/fiberguard/fiberguard/upstreampick/core/fasthttpclient"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/log"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c fiber.Ctx) bool: nil
//   - Servers []string: none: required, unless Discover names at least one name.
//   - Discover []Discovery: nil (Servers only)
//   - Mode Mode: ModeLatency
//   - HealthInterval time.Duration: 1 * time.Second
//   - HealthTimeout time.Duration: HealthInterval / 2
//   - DrainTimeout time.Duration: 30 * time.Second
//   - Timeout time.Duration: 1 * time.Second
//   - Retries int: 2
//   - ConfigureClient any: nil
//   - Resolver Resolver: nil (net.DefaultResolver)
//   - LookupHost func(ctx context.Context, host string) (addrs []string, err error): nil
//     (net.DefaultResolver.LookupHost)
//   - Dial func(ctx context.Context, addr string) (net.Conn, error): nil (a net.Dialer over TCP)
//   - OnReject fiber.Handler: 503 with the body "upstreampick: no upstream available\n" (the adapter's ConfigDefault)
//   - RetryAfter time.Duration: time.Second
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close)
type Config = core.Config[fiber.Ctx, fiber.Handler]

// ConfigDefault is the default config. Servers and Discover have no default.
var ConfigDefault = core.Defaults[fiber.Ctx, fiber.Handler](func(c fiber.Ctx) error {
	return c.Status(fiber.StatusServiceUnavailable).SendString("upstreampick: no upstream available\n")
})

// Picker chooses an upstream for each request and keeps the upstreams' latency, health and drain state (see
// fasthttpclient.Picker for its methods). Create it with NewPicker and stop it with Close (or Config.Context).
type Picker = fasthttpclient.Picker[fiber.Ctx, fiber.Handler]

// ErrNoUpstream is returned by LBClient and BalancingClient when no upstream can take a request: every one is
// unhealthy or draining. It is a *fiber.Error of Fiber v3 with status 503, so through proxy.Balancer Fiber's
// error handler answers 503 Service Unavailable at once; an ErrorHandler answers it as Handler would with
// Picker.Reject (see the README). Handler calls Config.OnReject instead.
var ErrNoUpstream = &fiber.Error{Code: fiber.StatusServiceUnavailable, Message: "upstreampick: no upstream available"}

// New creates a Picker (see NewPicker) and returns its Handler. Its health goroutine stops when Config.Context
// is done; with no Context it runs for the life of the process.
func New(config ...Config) fiber.Handler {
	return NewPicker(config...).Handler()
}

// NewPicker creates a Picker over Config.Servers and the addresses of Config.Discover, and starts its health
// checks (see fasthttpclient.NewPicker). It panics, naming the field, when the config is invalid.
func NewPicker(config ...Config) *Picker {
	return fasthttpclient.NewPicker(ConfigDefault, fasthttpclient.Framework{
		NoUpstream:     ErrNoUpstream,
		GatewayTimeout: fiber.ErrGatewayTimeout,
		BadGateway:     fiber.ErrBadGateway,
		Log:            fiberLog{},
	}, config...)
}

// fiberLog writes the core's warnings to Fiber's log.
type fiberLog struct{}

func (fiberLog) Warnf(format string, v ...any) { log.Warnf(format, v...) }
