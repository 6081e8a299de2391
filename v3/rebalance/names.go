package rebalance

import (
	"github.com/fiberguard/fiberguard/rebalance/core"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// The core's names, re-exported: this package is the Fiber v3 adapter of github.com/fiberguard/fiberguard/rebalance/core.

// Cluster is a reading of the cluster: what a ClusterSource returns once per interval.
type Cluster = core.Cluster

// ClusterSource returns the current reading of the cluster. The middleware calls it once per Config.Interval from a
// single goroutine; ctx ends after one Interval. An error is counted, logged, and stops shedding until a later call
// succeeds.
type ClusterSource = core.ClusterSource

// Decision says what a node decided in its last interval, and why.
type Decision = core.Decision

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

// Status is a node's view of the cluster after its last interval, ready for JSON (a status page). It has no
// rejection count because the middleware rejects nothing.
type Status = core.Status

// DefaultQuery is the PromQL query the Prometheus source runs when Config.Query is empty: the open connections of
// every node whose last scrape succeeded (see the core's documentation for narrowing it to one job).
const DefaultQuery = core.DefaultQuery

// DefaultTimestampQuery is the PromQL query the Prometheus source runs beside DefaultQuery to learn how old the
// samples are.
const DefaultTimestampQuery = core.DefaultTimestampQuery

// ErrNotVector is returned by the PromQL source when the query's result is not an instant vector.
var ErrNotVector = core.ErrNotVector

// ErrNoTimestamp is returned by the PromQL source when the query found live nodes but the timestamp query gave no
// usable timestamp: the age of the reading is unknown, so it cannot count as fresh.
var ErrNoTimestamp = core.ErrNoTimestamp

// PromQL returns a ClusterSource that runs query and timestampQuery as instant queries through api, both at the same
// evaluation time: the reading's average is the mean of query's samples, one per live node, and it is as old as
// the oldest timestamp that timestampQuery returns. An empty result is a reading of no nodes: shedding pauses.
func PromQL(api v1.API, query, timestampQuery string) ClusterSource {
	return core.PromQL(api, query, timestampQuery)
}
