// Package fiberglue is the rebalance middleware the Fiber adapters share, generic over the Fiber version's request
// context: Rebalancer, which asks the core's Engine once per response whether to close its connection, over the
// fasthttp request context each Fiber version reaches differently (Framework). It is apart from the core so that a
// net/http build of the core compiles no fasthttp.
package fiberglue

import (
	"sync/atomic"

	"github.com/fiberguard/fiberguard/rebalance/core"

	"github.com/valyala/fasthttp"
)

// Ctx is what the handler needs of a framework's request context. Fiber v2's *fiber.Ctx and Fiber v3's
// fiber.Ctx both have it.
type Ctx interface {
	Next() error
}

// App is what the Rebalancer needs of a framework's app: the fasthttp server whose open connections it counts.
// Fiber v2's and Fiber v3's *fiber.App both have it; the zero value (nil) means no app.
type App interface {
	comparable
	Server() *fasthttp.Server
}

// Framework is what an adapter tells the Rebalancer about its framework version: the parts that the versions
// spell differently.
type Framework[C any, A any] struct {
	// RequestCtx returns the fasthttp request context under c (Fiber v2: c.Context(); Fiber v3: c.RequestCtx()).
	RequestCtx func(c C) *fasthttp.RequestCtx
	// App returns the app serving c.
	App func(c C) A
	// OnShutdown makes app call stop when it shuts down.
	OnShutdown func(app A, stop func() error)
}

// Rebalancer owns the background loop that compares this node with the cluster, and the handler that spends the
// shed budget. Create it with NewRebalancer, mount Handler, read core.Status, and call Close to stop the loop.
//
// C is the framework's request context and H its handler type.
type Rebalancer[C Ctx, H ~func(C) error] struct {
	next        func(c C) bool
	requestCtx  func(c C) *fasthttp.RequestCtx
	appServer   func(c C) *fasthttp.Server
	connections func() int                      // Config.Connections
	server      atomic.Pointer[fasthttp.Server] // the app's server, when connections are read from it
	engine      *core.Engine
}

// NewRebalancer fills the first of config (or, with none, defaults) from defaults (an adapter's ConfigDefault),
// validates it and starts the background loop; the first comparison runs at once, and NewRebalancer returns
// without waiting for it. The loop stops on Close, when Config.Context is done, or when Config.App shuts down.
// log receives the engine's log lines.
//
// NewRebalancer panics when the config is invalid, naming the field.
func NewRebalancer[C Ctx, H ~func(C) error, A App](defaults core.Config[C, A], fw Framework[C, A], log core.Logger,
	config ...core.Config[C, A]) *Rebalancer[C, H] {
	cfg := defaults
	if len(config) > 0 {
		cfg = config[0]
	}
	cfg = cfg.WithDefaults(defaults)
	r := newRebalancer[C, H](cfg, fw, log)
	r.engine.Start()
	var none A
	if cfg.App != none {
		fw.OnShutdown(cfg.App, r.Close)
	}
	return r
}

// newRebalancer builds a Rebalancer from a filled config without starting its loop; core.NewEngine validates it.
func newRebalancer[C Ctx, H ~func(C) error, A App](cfg core.Config[C, A], fw Framework[C, A], log core.Logger) *Rebalancer[C, H] {
	r := &Rebalancer[C, H]{
		next:        cfg.Next,
		requestCtx:  fw.RequestCtx,
		appServer:   func(c C) *fasthttp.Server { return fw.App(c).Server() },
		connections: cfg.Connections,
	}
	var none A
	if cfg.App != none {
		r.server.Store(cfg.App.Server())
	}
	cfg.Connections = r.localConnections
	r.engine = core.NewEngine(cfg, log)
	return r
}

// Handler returns the middleware; every call returns an equivalent handler over the same state. A request that
// finds budget left is answered as usual, with "Connection: close", so its client reconnects through the load
// balancer; a connection that closes anyway is never counted as shed. No request is rejected. The handler takes
// no lock and allocates nothing; after Close it passes every request through.
func (r *Rebalancer[C, H]) Handler() H {
	return H(r.handle)
}

func (r *Rebalancer[C, H]) handle(c C) error {
	if r.next != nil && r.next(c) {
		return c.Next()
	}
	if r.connections == nil && r.server.Load() == nil {
		r.server.CompareAndSwap(nil, r.appServer(c))
	}
	err := c.Next()
	ctx := r.requestCtx(c)
	if r.engine.Shed(ctx.Request.Header.ConnectionClose() || ctx.Response.Header.ConnectionClose()) {
		ctx.SetConnectionClose()
	}
	return err
}

// localConnections is this node's open connections: from Config.Connections, or from the server of the app.
func (r *Rebalancer[C, H]) localConnections() int {
	if r.connections != nil {
		return r.connections()
	}
	if s := r.server.Load(); s != nil {
		// fasthttp reports -1 before the server starts serving.
		return max(0, int(s.GetOpenConnectionsCount()))
	}
	return 0
}

// Status returns the node's view after its last interval: a fresh value, safe to call concurrently.
func (r *Rebalancer[C, H]) Status() core.Status {
	return r.engine.Status()
}

// Close stops the loop and waits for it to end: shedding stops, the metrics are unregistered, and the idle
// connections of the Rebalancer's own Prometheus transport are closed. It is idempotent, always returns nil, and
// is safe to call while requests are served: the handler passes them through afterwards, unshed.
func (r *Rebalancer[C, H]) Close() error {
	return r.engine.Close()
}
