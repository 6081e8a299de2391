// Package rebalance moves keep-alive connections off a Fiber node that holds more than its share of the cluster's.
//
// A load balancer places only new connections, so after a rolling restart or a scale-out the long-lived keep-alive
// connections stay on the nodes that were up first. Once per interval each node compares its open connections with
// the cluster average (read from Prometheus, or from any ClusterSource); a node at or above the threshold answers a
// few requests normally but with "Connection: close", and those clients reconnect through the load balancer.
//
// The middleware never rejects a request, so unlike the suite's other middlewares it has no OnReject or
// RetryAfter and sets no Fiberguard-Rejected-By header: a shed request gets its usual answer, and only its
// connection closes after it.
//
// New and NewRebalancer do not block: they start one goroutine, whose first comparison runs at once; Status
// reports DecisionStarting (UpdatedAt nil) until it ends, within one Interval even when the source hangs.
//
// This is the middleware for Fiber v3; github.com/fiberguard/fiberguard/rebalance is the same middleware, with the
// same Config, for Fiber v2. Both are adapters over github.com/fiberguard/fiberguard/rebalance/core.
package rebalance

import (
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/log"
)

// New returns the middleware: NewRebalancer(config...).Handler(). Its background loop runs until Config.Context
// is done or Config.App shuts down (with neither, for the life of the process); use NewRebalancer for a handle
// with Status and Close.
//
// New panics when the config is invalid, naming the field.
func New(config ...Config) fiber.Handler {
	return NewRebalancer(config...).Handler()
}

// NewRebalancer validates the config and starts the background loop; the first comparison runs at once, and
// NewRebalancer returns without waiting for it. The loop stops on Close, when Config.Context is done, or when
// Config.App shuts down.
//
// NewRebalancer panics when the config is invalid, naming the field.
func NewRebalancer(config ...Config) *Rebalancer {
	cfg := configDefault(config...)
	cfg.validate()
	r := newRebalancer(cfg)
	r.engine.Start()
	if cfg.App != nil {
		// After the server has shut down, as Fiber v2's OnShutdown runs.
		cfg.App.Hooks().OnPostShutdown(func(error) error { return r.Close() })
	}
	return r
}

// Handler returns the middleware; every call returns an equivalent handler over the same state. A request that
// finds budget left is answered as usual, with "Connection: close", so its client reconnects through the load
// balancer; a connection that closes anyway is never counted as shed. No request is rejected. The handler takes
// no lock and allocates nothing; after Close it passes every request through.
func (r *Rebalancer) Handler() fiber.Handler {
	return func(c fiber.Ctx) error {
		if r.next != nil && r.next(c) {
			return c.Next()
		}
		if r.connections == nil && r.server.Load() == nil {
			r.server.CompareAndSwap(nil, c.App().Server())
		}
		err := c.Next()
		ctx := c.RequestCtx()
		if r.engine.Shed(ctx.Request.Header.ConnectionClose() || ctx.Response.Header.ConnectionClose()) {
			ctx.SetConnectionClose()
		}
		return err
	}
}

// localConnections is this node's open connections: from Config.Connections, or from the server of the app.
func (r *Rebalancer) localConnections() int {
	if r.connections != nil {
		return r.connections()
	}
	if s := r.server.Load(); s != nil {
		// fasthttp reports -1 before the server starts serving.
		return max(0, int(s.GetOpenConnectionsCount()))
	}
	return 0
}

// fiberLogger writes the core's log lines through Fiber's log, so that the application's log settings apply.
type fiberLogger struct{}

func (fiberLogger) Infof(format string, v ...any) { log.Infof(format, v...) }
func (fiberLogger) Warnf(format string, v ...any) { log.Warnf(format, v...) }
