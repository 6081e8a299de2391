package fiberglue

import (
	"context"

	"github.com/fiberguard/fiberguard/rebalance/core"
)

func fixed(avg float64, nodes int) core.ClusterSource {
	return func(context.Context) (core.Cluster, error) { return core.Cluster{Average: avg, Nodes: nodes}, nil }
}
