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
package rebalance

import (
	"github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/fiberguard/fiberguard/rebalance/core/fiberglue"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *fiber.Ctx) bool: nil
//   - App *fiber.App: nil
//   - PrometheusURL string: ""
//   - Query string: DefaultQuery
//   - TimestampQuery string: DefaultTimestampQuery (when Query is DefaultQuery or empty)
//   - Cluster ClusterSource: nil (query PrometheusURL)
//   - Connections func() int: nil (the open connections of App, or of the Fiber app serving the first request)
//   - Interval time.Duration: 1 * time.Second
//   - Threshold float64: 0.2
//   - Target float64: 0
//   - ShedRate float64: 0.005
//   - MinConnections int: 50
//   - MaxAge time.Duration: 3 * Interval
//   - Window time.Duration: 5 * time.Second
//   - RoundTripper http.RoundTripper: nil (the Prometheus client's default transport)
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close, or until App shuts down)
type Config = core.Config[*fiber.Ctx, *fiber.App]

// ConfigDefault is the default config. It has no source of the cluster average: set PrometheusURL or Cluster.
// MaxAge, left zero, follows Interval (3 * Interval).
var ConfigDefault = core.Defaults[*fiber.Ctx, *fiber.App]()

// Rebalancer owns the background loop that compares this node with the cluster, and the handler that spends the
// shed budget. Create it with NewRebalancer, mount Handler, read Status, and call Close to stop the loop.
type Rebalancer = fiberglue.Rebalancer[*fiber.Ctx, fiber.Handler]

// New returns the middleware: NewRebalancer(config...).Handler(). Its background loop runs until Config.Context
// is done or Config.App shuts down (with neither, for the life of the process); use NewRebalancer for a handle
// with Status and Close.
//
// New panics when the config is invalid, naming the field.
func New(config ...Config) fiber.Handler {
	return NewRebalancer(config...).Handler()
}

// NewRebalancer fills the config's zero fields from ConfigDefault, validates it and starts the background loop;
// the first comparison runs at once, and NewRebalancer returns without waiting for it. The loop stops on Close,
// when Config.Context is done, or when Config.App shuts down.
//
// NewRebalancer panics when the config is invalid, naming the field.
func NewRebalancer(config ...Config) *Rebalancer {
	return fiberglue.NewRebalancer[*fiber.Ctx, fiber.Handler](ConfigDefault, fiberV2, fiberLog{}, config...)
}

// fiberV2 is how Fiber v2 reaches fasthttp and stops the loop with the app.
var fiberV2 = fiberglue.Framework[*fiber.Ctx, *fiber.App]{
	RequestCtx: (*fiber.Ctx).Context,
	App:        (*fiber.Ctx).App,
	OnShutdown: func(app *fiber.App, stop func() error) { app.Hooks().OnShutdown(stop) },
}

// fiberLog writes the core's log lines through Fiber's log, so that the application's log settings apply.
type fiberLog struct{}

func (fiberLog) Infof(format string, v ...any) { log.Infof(format, v...) }
func (fiberLog) Warnf(format string, v ...any) { log.Warnf(format, v...) }
