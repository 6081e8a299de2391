package fasthttpclient

import (
	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/valyala/fasthttp"
)

// Ctx is what Picker needs of a web framework's request context. Fiber v2's *fiber.Ctx and Fiber v3's
// fiber.Ctx both have these methods.
type Ctx interface {
	Next() error
	Request() *fasthttp.Request
	Response() *fasthttp.Response
}

// Framework holds what a Fiber version spells differently, given by its adapter to NewPicker.
type Framework struct {
	// NoUpstream is the adapter's ErrNoUpstream: what LBClient and BalancingClient return when no upstream can
	// take a request, a 503 error of its Fiber version.
	NoUpstream error
	// GatewayTimeout and BadGateway are what Handler returns when the upstream did not answer in time and on
	// any other upstream failure: the version's fiber.ErrGatewayTimeout and fiber.ErrBadGateway.
	GatewayTimeout, BadGateway error
	// Log receives warnings: the version's log package.
	Log core.Logger
}

// Picker chooses an upstream for each request and keeps the upstreams' latency, health and drain state. Create
// it with NewPicker and stop it with Close (or Config.Context). All methods are safe for concurrent use.
//
// C is the framework's request context and H its handler type: an adapter's Picker is
// Picker[*fiber.Ctx, fiber.Handler] (Fiber v2) or Picker[fiber.Ctx, fiber.Handler] (Fiber v3).
type Picker[C Ctx, H ~func(C) error] struct {
	cfg    core.Config[C, H]
	fw     Framework
	engine *core.Engine
	client *Client
}

// NewPicker creates a Picker over config (its zero fields taken from defaults, the adapter's ConfigDefault)
// and starts its health checks; the first round starts at once and NewPicker does not wait for it. With
// Config.Discover it first resolves every name at once and waits for the answers, each at most half its
// interval. Until an upstream's first dial completes it is picked like a member of the nearest tier.
// NewPicker panics, naming the field, when the config is invalid.
func NewPicker[C Ctx, H ~func(C) error](defaults core.Config[C, H], fw Framework, config ...core.Config[C, H]) *Picker[C, H] {
	cfg := defaults
	if len(config) > 0 {
		cfg = config[0]
	}
	cfg = cfg.WithDefaults(defaults)
	cfg.Validate()
	CheckConfigureClient(cfg.ConfigureClient)
	e := core.NewEngine(cfg, fw.Log, NewHostClient)
	return &Picker[C, H]{cfg: cfg, fw: fw, engine: e, client: New(e, fw.NoUpstream)}
}

// Handler returns a handler that proxies the request to a picked upstream, for apps that need none of
// proxy.Balancer's options. When no upstream is pickable it answers as Reject does: it sets the Retry-After and
// Fiberguard-Rejected-By headers and calls Config.OnReject (by default 503). It returns fiber.ErrGatewayTimeout
// (504) when the upstream did not answer within Config.Timeout and fiber.ErrBadGateway (502) on any other
// upstream failure, each for the app's ErrorHandler. Every call returns an equivalent handler over the same
// Picker.
func (p *Picker[C, H]) Handler() H { return H(p.handle) }

func (p *Picker[C, H]) handle(c C) error {
	if p.cfg.Next != nil && p.cfg.Next(c) {
		return c.Next()
	}
	switch p.client.Proxy(c.Request(), c.Response()) {
	case Proxied:
		return nil
	case Rejected:
		return p.Reject(c)
	case TimedOut:
		return p.fw.GatewayTimeout
	}
	return p.fw.BadGateway
}

// Reject answers c as Handler does when no upstream can take it: it sets the Retry-After and
// Fiberguard-Rejected-By headers, counts the request as rejected (in Status and the requests_total metric)
// unless LBClient or BalancingClient already counted it, and calls Config.OnReject. Its use is the app's
// ErrorHandler, for the ErrNoUpstream of proxy.Balancer:
//
//	if errors.Is(err, upstreampick.ErrNoUpstream) {
//		return picker.Reject(c)
//	}
func (p *Picker[C, H]) Reject(c C) error {
	p.client.SetRejectHeaders(c.Request(), &c.Response().Header)
	return p.cfg.OnReject(c)
}

// LBClient returns the client to pass to proxy.Balancer:
//
//	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))
//
// It holds a single fasthttp.BalancingClient that picks the upstream itself, so LBClient's own least-loaded
// choice and failure penalty play no part. Its Timeout is Config.Timeout. Every call returns the same client.
// When no upstream can take a request it returns ErrNoUpstream.
func (p *Picker[C, H]) LBClient() *fasthttp.LBClient { return p.client.LBClient() }

// BalancingClient returns the picker as a fasthttp.BalancingClient, for an LBClient of your own.
func (p *Picker[C, H]) BalancingClient() fasthttp.BalancingClient { return p.client }

// SetServers replaces the upstream list; with Config.Discover it replaces the static part only (what
// Config.Servers listed): discovered upstreams stay, and an empty list, allowed then, leaves only them. New
// servers start unmeasured and pickable; kept servers keep their state (a server is matched by scheme, host and
// port, so "127.0.0.1:80" keeps the state of "http://127.0.0.1" and takes the new spelling as its name; so is a
// discovered address listed here too); removed servers drain: they get no new requests and are forgotten (with
// their metrics) once their requests in flight have finished or Config.DrainTimeout has passed, checked every
// HealthInterval. Listing a draining server again aborts its drain. An invalid list is rejected as a whole with
// an error.
func (p *Picker[C, H]) SetServers(servers []string) error { return p.engine.SetServers(servers) }

// Pick chooses an upstream for a request the caller sends itself, and counts it as a pick. It returns the
// server as configured, or false when no upstream is pickable (answer the request with Reject then). It does
// not allocate.
func (p *Picker[C, H]) Pick() (server string, ok bool) { return p.engine.Pick() }

// Status returns a fresh view: every upstream, listed ones first (the static servers in their order, then each
// discovered name's addresses), then draining ones; and every discovered name.
func (p *Picker[C, H]) Status() core.Status { return p.engine.Status() }

// Close stops the health checks and the resolutions of Config.Discover, waits for their goroutines to end,
// unregisters the metrics and closes idle upstream connections; Config.Context being done does the same.
// Requests, even concurrent ones, are still answered afterwards, through the last pickable set. Close is
// idempotent and returns nil.
func (p *Picker[C, H]) Close() error { return p.engine.Close() }
