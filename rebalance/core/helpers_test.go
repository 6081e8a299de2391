package core

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fixed returns a ClusterSource that always reads avg over nodes.
func fixed(avg float64, nodes int) ClusterSource {
	return func(context.Context) (Cluster, error) { return Cluster{Average: avg, Nodes: nodes}, nil }
}

// testConfig is a valid, filled config with its own registry: a node with local connections in a cluster
// averaging 40, which sheds ceil(40 * 0.05) = 2 connections per interval when local is 60.
func testConfig(src ClusterSource, local int) Config[any, any] {
	return Config[any, any]{
		Cluster:        src,
		Connections:    func() int { return local },
		ShedRate:       0.05,
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}.WithDefaults(Defaults[any, any]())
}

// sheds asks e about n responses on connections that stay open and counts the answers that close them.
func sheds(e *Engine, n int) int {
	closes := 0
	for range n {
		if e.Shed(false) {
			closes++
		}
	}
	return closes
}

// waitFor polls cond, for state that another goroutine settles (the loop, a server).
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
