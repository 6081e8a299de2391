package rebalance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// fixed returns a ClusterSource that always reads avg over nodes.
func fixed(avg float64, nodes int) ClusterSource {
	return func(context.Context) (Cluster, error) { return Cluster{Average: avg, Nodes: nodes}, nil }
}

// testConfig is a valid, filled config with its own registry: a node with 60 connections in a cluster averaging
// 40, which sheds ceil(40 * 0.05) = 2 connections per interval.
func testConfig(src ClusterSource, local int) Config {
	return configDefault(Config{
		Cluster:        src,
		Connections:    func() int { return local },
		ShedRate:       0.05,
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	})
}

// handle runs one request through app.Test and reports whether the response closes the connection.
func handle(t testing.TB, app *fiber.App, connectionClose bool) bool {
	t.Helper()
	closed, err := request(app, "/", connectionClose, nil)
	if err != nil {
		t.Fatal(err)
	}
	return closed
}

// request is handle for goroutines other than the test's, for any path and headers: it returns what handle
// fails on.
func request(app *fiber.App, path string, connectionClose bool, header http.Header) (closed bool, err error) {
	req := httptest.NewRequest(fiber.MethodGet, path, nil)
	if connectionClose {
		req.Header.Set("Connection", "close") // app.Test sends the headers, not req.Close
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := app.Test(req, fiber.TestConfig{Timeout: 10 * time.Second})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != fiber.StatusOK || string(body) != "ok" {
		return false, fmt.Errorf("response %d %q, want 200 ok", resp.StatusCode, body)
	}
	return resp.Close, nil
}

func newApp(h fiber.Handler) *fiber.App {
	app := fiber.New()
	app.Use(h)
	app.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
	return app
}

func countCloses(t testing.TB, app *fiber.App, n int) int {
	closes := 0
	for range n {
		if handle(t, app, false) {
			closes++
		}
	}
	return closes
}

func TestHandlerSpendsTheBudgetOncePerInterval(t *testing.T) {
	r := newRebalancer(testConfig(fixed(40, 3), 60))
	app := newApp(r.Handler())

	if got := countCloses(t, app, 5); got != 0 {
		t.Fatalf("before the first interval: %d responses closed, want 0", got)
	}
	r.engine.Evaluate(context.Background())
	st := r.Status()
	if st.Decision != DecisionShedding || st.Budget != 2 || st.Balance != 0.5 || st.Average != 40 || st.Nodes != 3 {
		t.Fatalf("status %+v, want shedding with budget 2 at balance 0.5", st)
	}
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("first interval: %d of 5 responses closed, want the budget of 2", got)
	}
	r.engine.Evaluate(context.Background())
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("second interval: %d of 5 responses closed, want 2 again", got)
	}
	if st := r.Status(); st.Shed != 4 {
		t.Fatalf("Shed = %d, want 4", st.Shed)
	}
}

func TestClosingConnectionsAndSkippedRequestsAreNotShed(t *testing.T) {
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Next = func(c fiber.Ctx) bool { return c.Get("X-Skip") != "" }
	r := newRebalancer(cfg)
	app := newApp(r.Handler())
	// A handler that closes its response's connection itself: that connection is not shed either.
	app.Get("/bye", func(c fiber.Ctx) error {
		c.RequestCtx().SetConnectionClose()
		return c.SendString("ok")
	})
	r.engine.Evaluate(context.Background())

	for range 3 {
		handle(t, app, true) // closes anyway: must not use the budget
	}
	for range 3 {
		closed, err := request(app, "/", false, http.Header{"X-Skip": {"1"}})
		if err != nil {
			t.Fatal(err)
		}
		if closed {
			t.Fatal("a request skipped by Next was shed")
		}
	}
	for range 3 {
		if _, err := request(app, "/bye", false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("%d responses closed after closing and skipped requests, want the whole budget of 2", got)
	}
	if st := r.Status(); st.Shed != 2 {
		t.Fatalf("Shed = %d, want 2", st.Shed)
	}
}

// TestMetricsThroughTheAdapter: the metrics are registered on Config.Registerer under Config.Name, count the
// connections the adapter reads, and go with Close.
func TestMetricsThroughTheAdapter(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRebalancer(Config{Cluster: fixed(40, 3), Connections: func() int { return 60 }, MinConnections: 10,
		ShedRate: 0.05, Name: "api", Registerer: reg})
	app := newApp(r.Handler())
	waitFor(t, func() bool { return r.Status().Decision == DecisionShedding })
	countCloses(t, app, 3)
	want := map[string]float64{
		"fiberguard_rebalance_open_connections":    60,
		"fiberguard_rebalance_cluster_average":     40,
		"fiberguard_rebalance_cluster_nodes":       3,
		"fiberguard_rebalance_balance":             0.5,
		"fiberguard_rebalance_shed_total":          2,
		"fiberguard_rebalance_source_errors_total": 0,
	}
	got := gather(t, reg)
	if len(got) != len(want) {
		t.Fatalf("metrics %v, want %v", got, want)
	}
	for name, v := range want {
		if got[name] != v {
			t.Fatalf("%s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
	r.Close()
	if got := gather(t, reg); len(got) != 0 {
		t.Fatalf("metrics after Close: %v", got)
	}
}

// gather returns the value of every sample in g labelled name="api", failing on any other label.
func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "name" || l[0].GetValue() != "api" {
				t.Fatalf("%s has labels %v, want name=api", f.GetName(), l)
			}
			out[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}
