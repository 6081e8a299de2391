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
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Config defines the config for the middleware.
type Config = core.Config[*fiber.Ctx, *fiber.App]

// ConfigDefault is the default config. It has no source of the cluster average: set PrometheusURL or Cluster.
// MaxAge, left zero, follows Interval (3 * Interval).
var ConfigDefault = core.Defaults[*fiber.Ctx, *fiber.App]()

// Rebalancer owns the background loop that compares this node with the cluster, and the handler that spends the
// shed budget. Create it with NewRebalancer, mount Handler, read Status, and call Close to stop the loop.
type Rebalancer = core.Rebalancer[*fiber.Ctx, fiber.Handler]

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
	return core.NewRebalancer[*fiber.Ctx, fiber.Handler](ConfigDefault, fiberV2, fiberLogger{}, config...)
}

// fiberV2 is how Fiber v2 reaches fasthttp and stops the loop with the app.
var fiberV2 = core.Framework[*fiber.Ctx, *fiber.App]{
	RequestCtx: (*fiber.Ctx).Context,
	App:        (*fiber.Ctx).App,
	OnShutdown: func(app *fiber.App, close func() error) { app.Hooks().OnShutdown(close) },
}

// fiberLogger writes the core's log lines through Fiber's log, so that the application's log settings apply.
type fiberLogger struct{}

func (fiberLogger) Infof(format string, v ...any) { log.Infof(format, v...) }
func (fiberLogger) Warnf(format string, v ...any) { log.Warnf(format, v...) }

// The core's names, re-exported.
type (
	// Cluster is a reading of the cluster: what a ClusterSource returns once per interval.
	Cluster = core.Cluster
	// ClusterSource returns the current reading of the cluster. The middleware calls it once per Config.Interval
	// from a single goroutine; ctx ends after one Interval. An error is counted, logged, and stops shedding until
	// a later call succeeds.
	ClusterSource = core.ClusterSource
	// Decision says what a node decided in its last interval, and why.
	Decision = core.Decision
	// Status is a node's view of the cluster after its last interval, ready for JSON (a status page). It has no
	// rejection count because the middleware rejects nothing.
	Status = core.Status
)

// The decisions a node reports in Status.
const (
	DecisionStarting    = core.DecisionStarting    // no interval has completed yet
	DecisionShedding    = core.DecisionShedding    // the node holds more than its share and closes some connections this interval
	DecisionBalanced    = core.DecisionBalanced    // the balance is below the threshold, or a shedding node is back at its target
	DecisionBelowFloor  = core.DecisionBelowFloor  // the node holds Config.MinConnections or fewer
	DecisionSingleNode  = core.DecisionSingleNode  // the cluster has one live node
	DecisionNoAverage   = core.DecisionNoAverage   // the cluster average is unknown (no live node reported) or zero
	DecisionStale       = core.DecisionStale       // the reading is older than Config.MaxAge
	DecisionSourceError = core.DecisionSourceError // the source failed; shedding waits for a fresh reading
)

const (
	// DefaultQuery is the PromQL query the Prometheus source runs when Config.Query is empty: the open connections
	// of every node whose last scrape succeeded (see the core's documentation for narrowing it to one job).
	DefaultQuery = core.DefaultQuery
	// DefaultTimestampQuery is the PromQL query the Prometheus source runs beside DefaultQuery to learn how old
	// the samples are.
	DefaultTimestampQuery = core.DefaultTimestampQuery
)

var (
	// ErrNotVector is returned by the PromQL source when the query's result is not an instant vector.
	ErrNotVector = core.ErrNotVector
	// ErrNoTimestamp is returned by the PromQL source when the query found live nodes but the timestamp query gave
	// no usable timestamp: the age of the reading is unknown, so it cannot count as fresh.
	ErrNoTimestamp = core.ErrNoTimestamp
)

// PromQL returns a ClusterSource that runs query and timestampQuery as instant queries through api, both at the
// same evaluation time: the reading's average is the mean of query's samples, one per live node, and it is as old
// as the oldest timestamp that timestampQuery returns. An empty result is a reading of no nodes: shedding pauses.
func PromQL(api v1.API, query, timestampQuery string) ClusterSource {
	return core.PromQL(api, query, timestampQuery)
}
