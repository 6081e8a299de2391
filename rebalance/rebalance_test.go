package rebalance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
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

// handle runs one request through app's handler, as the server would, and reports whether the response closes
// the connection.
func handle(t testing.TB, app *fiber.App, connectionClose bool) bool {
	t.Helper()
	closed, err := request(app, connectionClose)
	if err != nil {
		t.Fatal(err)
	}
	return closed
}

// request is handle for goroutines other than the test's: it returns what handle fails on.
func request(app *fiber.App, connectionClose bool) (closed bool, err error) {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	if connectionClose {
		ctx.Request.Header.SetConnectionClose()
	}
	app.Handler()(&ctx)
	if ctx.Response.StatusCode() != fiber.StatusOK || string(ctx.Response.Body()) != "ok" {
		return false, fmt.Errorf("response %d %q, want 200 ok", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return ctx.Response.ConnectionClose(), nil
}

func newApp(h fiber.Handler) *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(h)
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
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
	r.tick(context.Background())
	st := r.Status()
	if st.Decision != DecisionShedding || st.Budget != 2 || st.Balance != 0.5 || st.Average != 40 || st.Nodes != 3 {
		t.Fatalf("status %+v, want shedding with budget 2 at balance 0.5", st)
	}
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("first interval: %d of 5 responses closed, want the budget of 2", got)
	}
	r.tick(context.Background())
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("second interval: %d of 5 responses closed, want 2 again", got)
	}
	if st := r.Status(); st.Shed != 4 {
		t.Fatalf("Shed = %d, want 4", st.Shed)
	}
}

func TestUnspentBudgetDoesNotAccumulate(t *testing.T) {
	r := newRebalancer(testConfig(fixed(40, 3), 60))
	app := newApp(r.Handler())
	for range 5 {
		r.tick(context.Background())
	}
	if got := countCloses(t, app, 10); got != 2 {
		t.Fatalf("after 5 idle intervals: %d responses closed, want one interval's budget of 2", got)
	}
}

func TestClosingConnectionsAndSkippedRequestsAreNotShed(t *testing.T) {
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Next = func(c *fiber.Ctx) bool { return c.Get("X-Skip") != "" }
	r := newRebalancer(cfg)
	app := newApp(r.Handler())
	r.tick(context.Background())

	for range 3 {
		handle(t, app, true) // closes anyway: must not use the budget
	}
	for range 3 {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/")
		ctx.Request.Header.Set("X-Skip", "1")
		app.Handler()(&ctx)
		if ctx.Response.ConnectionClose() {
			t.Fatal("a request skipped by Next was shed")
		}
	}
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("%d responses closed after closing and skipped requests, want the whole budget of 2", got)
	}
	if st := r.Status(); st.Shed != 2 {
		t.Fatalf("Shed = %d, want 2", st.Shed)
	}
}

func TestBalancedNodeSheds(t *testing.T) {
	for _, tt := range []struct {
		name     string
		src      ClusterSource
		local    int
		decision Decision
	}{
		{"balanced", fixed(55, 3), 60, DecisionBalanced},
		{"single node", fixed(60, 1), 60, DecisionSingleNode},
		{"no live node", fixed(0, 0), 60, DecisionNoAverage},
		{"below floor", fixed(4, 3), 9, DecisionBelowFloor},
		{"stale", func(context.Context) (Cluster, error) {
			return Cluster{Average: 40, Nodes: 3, At: time.Now().Add(-time.Minute)}, nil
		}, 60, DecisionStale},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRebalancer(testConfig(tt.src, tt.local))
			app := newApp(r.Handler())
			r.tick(context.Background())
			if st := r.Status(); st.Decision != tt.decision || st.Budget != 0 {
				t.Fatalf("status %+v, want %s with no budget", st, tt.decision)
			}
			if got := countCloses(t, app, 5); got != 0 {
				t.Fatalf("%d responses closed, want 0", got)
			}
		})
	}
}

func TestSourceErrorStopsSheddingUntilAFreshReading(t *testing.T) {
	var fail atomic.Bool
	src := func(context.Context) (Cluster, error) {
		if fail.Load() {
			return Cluster{}, errors.New("prometheus is down")
		}
		return Cluster{Average: 40, Nodes: 3}, nil
	}
	r := newRebalancer(testConfig(src, 60))
	app := newApp(r.Handler())
	r.tick(context.Background())
	if st := r.Status(); st.Decision != DecisionShedding {
		t.Fatalf("state %s, want shedding", st.Decision)
	}

	fail.Store(true)
	r.tick(context.Background())
	r.tick(context.Background())
	st := r.Status()
	if st.Decision != DecisionSourceError || st.SourceErrors != 2 || st.LastError != "prometheus is down" || st.Budget != 0 {
		t.Fatalf("status %+v, want source_error, 2 errors, the message, no budget", st)
	}
	if got := countCloses(t, app, 5); got != 0 {
		t.Fatalf("%d responses closed while the source fails, want 0", got)
	}

	fail.Store(false)
	r.tick(context.Background())
	if st := r.Status(); st.Decision != DecisionShedding || st.LastError != "" || st.SourceErrors != 2 {
		t.Fatalf("status %+v after recovery, want shedding, no last error, 2 errors", st)
	}
	if got := countCloses(t, app, 5); got != 2 {
		t.Fatalf("%d responses closed after recovery, want 2", got)
	}
}

func TestRiseCountsAfterTheWindow(t *testing.T) {
	var local atomic.Int64
	local.Store(40)
	cfg := testConfig(fixed(40, 3), 0)
	cfg.Connections = func() int { return int(local.Load()) }
	cfg.Window = 2 * time.Second // with a 1 s interval: the lowest of the last 3 counts
	r := newRebalancer(cfg)
	tick := func() Status { r.tick(context.Background()); return r.Status() }

	tick()
	local.Store(60) // a stopped peer's clients arrive before the average knows the peer is gone
	for i := range 2 {
		if st := tick(); st.Decision != DecisionBalanced || st.Counted != 40 || st.Connections != 60 {
			t.Fatalf("interval %d after the rise: %+v, want balanced on a count of 40", i, st)
		}
	}
	if st := tick(); st.Decision != DecisionShedding || st.Counted != 60 {
		t.Fatalf("a rise that lasted the window: %+v, want shedding on 60", st)
	}
	local.Store(45)
	if st := tick(); st.Counted != 45 {
		t.Fatalf("a fall counts at once: counted %d, want 45", st.Counted)
	}
}
