package fiberglue

import (
	"context"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/rebalance/core"
)

func fixed(avg float64, nodes int) core.ClusterSource {
	return func(context.Context) (core.Cluster, error) { return core.Cluster{Average: avg, Nodes: nodes}, nil }
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
