package core

import (
	"context"
	"time"
)

// Cluster is a reading of the cluster: what a ClusterSource returns once per interval.
type Cluster struct {
	// Average is the mean number of open connections per live node, this node included.
	Average float64
	// Nodes is the number of live nodes the average is taken over.
	Nodes int
	// At is when the reading was taken. The zero time means the moment the ClusterSource returned it.
	At time.Time
}

// ClusterSource returns the current reading of the cluster. The middleware calls it once per Config.Interval from a
// single goroutine; ctx ends after one Interval. An error is counted, logged, and stops shedding until a later call
// succeeds.
type ClusterSource func(ctx context.Context) (Cluster, error)
