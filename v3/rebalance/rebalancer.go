package rebalance

import (
	"sync/atomic"

	"github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// Rebalancer owns the background loop that compares this node with the cluster, and the handler that spends the
// shed budget. Create it with NewRebalancer, mount Handler, read Status, and call Close to stop the loop.
type Rebalancer struct {
	next        func(c fiber.Ctx) bool
	connections func() int                      // Config.Connections
	server      atomic.Pointer[fasthttp.Server] // the app's server, when connections are read from it
	engine      *core.Engine
}

// newRebalancer builds a Rebalancer from a filled, valid config without starting its loop.
func newRebalancer(cfg Config) *Rebalancer {
	r := &Rebalancer{next: cfg.Next, connections: cfg.Connections}
	if cfg.App != nil {
		r.server.Store(cfg.App.Server())
	}
	ec := cfg.engineConfig()
	ec.Connections = r.localConnections
	ec.Logger = fiberLogger{}
	r.engine = core.New(ec)
	return r
}

// Status returns the node's view after its last interval: a fresh value, safe to call concurrently.
func (r *Rebalancer) Status() Status {
	return r.engine.Status()
}

// Close stops the loop and waits for it to end: shedding stops, the metrics are unregistered, and the idle
// connections of the Rebalancer's own Prometheus transport are closed. It is idempotent, always returns nil, and
// is safe to call while requests are served: the handler passes them through afterwards, unshed.
func (r *Rebalancer) Close() error {
	return r.engine.Close()
}
