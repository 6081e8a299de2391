package fiberglue

import (
	"context"
	"errors"
	"github.com/fiberguard/fiberguard/rebalance/core"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// fakeApp stands for a framework's app: the server it serves with, and the hooks run at its shutdown.
type fakeApp struct {
	server   fasthttp.Server
	shutdown []func() error
}

func (a *fakeApp) Server() *fasthttp.Server { return &a.server }

// fakeCtx stands for a framework's request context: Next runs the rest of the chain (a response that closes
// its connection itself, or an error) over one fasthttp request context.
type fakeCtx struct {
	rc    *fasthttp.RequestCtx
	app   *fakeApp
	skip  bool  // read by the test's Config.Next
	close bool  // the rest of the chain sets Connection: close
	err   error // the rest of the chain fails
	nexts int
}

func (c *fakeCtx) Next() error {
	c.nexts++
	if c.close {
		c.rc.SetConnectionClose()
	}
	return c.err
}

type fakeHandler func(*fakeCtx) error

var fakeFramework = Framework[*fakeCtx, *fakeApp]{
	RequestCtx: func(c *fakeCtx) *fasthttp.RequestCtx { return c.rc },
	App:        func(c *fakeCtx) *fakeApp { return c.app },
	OnShutdown: func(app *fakeApp, stop func() error) { app.shutdown = append(app.shutdown, stop) },
}

// fakeConfig is testConfig for the fake framework: a node with 60 connections in a cluster averaging 40, which
// sheds 2 connections per interval.
func fakeConfig() core.Config[*fakeCtx, *fakeApp] {
	return core.Config[*fakeCtx, *fakeApp]{
		Cluster:        fixed(40, 3),
		Connections:    func() int { return 60 },
		ShedRate:       0.05,
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}.WithDefaults(core.Defaults[*fakeCtx, *fakeApp]())
}

// serve runs one request through h and reports whether its response closes the connection.
func serve(t *testing.T, h fakeHandler, c *fakeCtx) bool {
	t.Helper()
	if c.rc == nil {
		c.rc = &fasthttp.RequestCtx{}
	}
	if err := h(c); !errors.Is(err, c.err) {
		t.Fatalf("handler returned %v, want the chain's %v", err, c.err)
	}
	if c.nexts != 1 {
		t.Fatalf("the chain ran %d times, want once", c.nexts)
	}
	return c.rc.Response.ConnectionClose()
}

func closes(t *testing.T, h fakeHandler, n int) int {
	t.Helper()
	closed := 0
	for range n {
		if serve(t, h, &fakeCtx{}) {
			closed++
		}
	}
	return closed
}

// TestHandlerSpendsTheBudgetOncePerInterval: each interval's budget closes that many responses' connections.
func TestHandlerSpendsTheBudgetOncePerInterval(t *testing.T) {
	r := newRebalancer[*fakeCtx, fakeHandler](fakeConfig(), fakeFramework, nil)
	defer r.Close()
	h := r.Handler()
	if got := closes(t, h, 5); got != 0 {
		t.Fatalf("before the first interval: %d responses closed, want 0", got)
	}
	r.engine.Evaluate(context.Background())
	if got := closes(t, h, 5); got != 2 {
		t.Fatalf("first interval: %d of 5 responses closed, want the budget of 2", got)
	}
	r.engine.Evaluate(context.Background())
	if got := closes(t, h, 5); got != 2 {
		t.Fatalf("second interval: %d of 5 responses closed, want 2 again", got)
	}
	if st := r.Status(); st.Shed != 4 {
		t.Fatalf("Shed = %d, want 4", st.Shed)
	}
}

// TestHandlerSpendsNoBudgetOnClosingOrSkippedRequests: a request skipped by Next, one whose request or response
// closes its connection anyway, and one whose chain fails pass through (with the chain's error) unshed.
func TestHandlerSpendsNoBudgetOnClosingOrSkippedRequests(t *testing.T) {
	cfg := fakeConfig()
	cfg.Next = func(c *fakeCtx) bool { return c.skip }
	r := newRebalancer[*fakeCtx, fakeHandler](cfg, fakeFramework, nil)
	defer r.Close()
	h := r.Handler()
	r.engine.Evaluate(context.Background())

	if serve(t, h, &fakeCtx{skip: true}) {
		t.Fatal("a request skipped by Next was shed")
	}
	requestCloses := &fakeCtx{rc: &fasthttp.RequestCtx{}}
	requestCloses.rc.Request.Header.SetConnectionClose()
	serve(t, h, requestCloses)
	serve(t, h, &fakeCtx{close: true})
	failed := &fakeCtx{err: errors.New("handler failed")}
	if !serve(t, h, failed) {
		t.Fatal("a failed request was not shed: its response goes out like any other")
	}
	if got := closes(t, h, 5); got != 1 {
		t.Fatalf("%d responses closed after closing and skipped requests, want the 1 left of the budget", got)
	}
	if st := r.Status(); st.Shed != 2 {
		t.Fatalf("Shed = %d, want 2", st.Shed)
	}
}

// TestConnectionsFromTheApp: Config.App's server is counted from the start; without it the server of the app
// serving the first request; Config.Connections wins over both.
func TestConnectionsFromTheApp(t *testing.T) {
	cfg := fakeConfig()
	cfg.Connections = nil
	app := &fakeApp{}

	r := newRebalancer[*fakeCtx, fakeHandler](cfg, fakeFramework, nil)
	defer r.Close()
	if r.server.Load() != nil {
		t.Fatal("a server before any request, with no Config.App")
	}
	serve(t, r.Handler(), &fakeCtx{app: app})
	serve(t, r.Handler(), &fakeCtx{app: &fakeApp{}})
	if r.server.Load() != app.Server() {
		t.Fatal("the server is not the first request's app's")
	}
	if got := r.localConnections(); got != 0 {
		t.Fatalf("%d connections of a server that does not serve, want 0 (not fasthttp's -1)", got)
	}

	cfg.App = app
	cfg.Name = "with-app"
	withApp := newRebalancer[*fakeCtx, fakeHandler](cfg, fakeFramework, nil)
	defer withApp.Close()
	if withApp.server.Load() != app.Server() {
		t.Fatal("Config.App's server is not counted from the start")
	}

	cfg.Connections = func() int { return 7 }
	cfg.Name = "with-connections"
	counted := newRebalancer[*fakeCtx, fakeHandler](cfg, fakeFramework, nil)
	defer counted.Close()
	serve(t, counted.Handler(), &fakeCtx{app: app})
	if got := counted.localConnections(); got != 7 {
		t.Fatalf("%d connections, want Config.Connections' 7", got)
	}
}

// TestNewRebalancerStopsWithTheApp: NewRebalancer hands Close to the shutdown hook of Config.App, and to none
// without an app.
func TestNewRebalancerStopsWithTheApp(t *testing.T) {
	app := &fakeApp{}
	cfg := fakeConfig()
	cfg.App = app
	r := NewRebalancer[*fakeCtx, fakeHandler](core.Defaults[*fakeCtx, *fakeApp](), fakeFramework, nil, cfg)
	if len(app.shutdown) != 1 {
		t.Fatalf("%d shutdown hooks, want 1", len(app.shutdown))
	}
	if err := app.shutdown[0](); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.engine.Done():
	default:
		t.Fatal("the loop runs on after the app's shutdown hook")
	}

	cfg.App = nil
	r = NewRebalancer[*fakeCtx, fakeHandler](core.Defaults[*fakeCtx, *fakeApp](), fakeFramework, nil, cfg)
	defer r.Close()
	if len(app.shutdown) != 1 {
		t.Fatal("a shutdown hook registered with no app")
	}
}

// TestNewRebalancerFillsFromTheGivenDefaults: the zero fields come from the adapter's defaults as given at the
// call (its ConfigDefault, which users may change), Next included; with no config, the defaults are the config.
func TestNewRebalancerFillsFromTheGivenDefaults(t *testing.T) {
	defaults := core.Defaults[*fakeCtx, *fakeApp]()
	defaults.Name = "site"
	defaults.Next = func(c *fakeCtx) bool { return true }
	r := NewRebalancer[*fakeCtx, fakeHandler](defaults, fakeFramework, nil, core.Config[*fakeCtx, *fakeApp]{
		Cluster: fixed(40, 3), DisableMetrics: true,
	})
	defer r.Close()
	if got := r.Status().Name; got != "site" {
		t.Fatalf("Name = %q, want the defaults' site", got)
	}
	if r.next == nil {
		t.Fatal("Next not taken from the defaults")
	}

	defaults.Cluster, defaults.DisableMetrics = fixed(40, 3), true
	bare := NewRebalancer[*fakeCtx, fakeHandler](defaults, fakeFramework, nil)
	defer bare.Close()
	if got := bare.Status().Name; got != "site" {
		t.Fatalf("Name = %q with no config, want the defaults' site", got)
	}
}

func TestNewRebalancerPanicsNamingTheField(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); msg != "rebalance: Config.PrometheusURL or Config.Cluster must be set" {
			t.Fatalf("panic %q, want one naming Config.PrometheusURL or Config.Cluster", msg)
		}
	}()
	NewRebalancer[*fakeCtx, fakeHandler](core.Defaults[*fakeCtx, *fakeApp](), fakeFramework, nil)
}

// TestHandlerAllocatesNothing: the request path allocates nothing, shedding or not.
func TestHandlerAllocatesNothing(t *testing.T) {
	cfg := fakeConfig()
	cfg.ShedRate, cfg.MinConnections = 1, -1
	cfg.Connections = func() int { return 1 << 40 }
	cfg.Cluster = fixed(1<<30, 3)
	r := newRebalancer[*fakeCtx, fakeHandler](cfg, fakeFramework, nil)
	defer r.Close()
	h := r.Handler()
	c := &fakeCtx{rc: &fasthttp.RequestCtx{}}
	for _, shedding := range []bool{false, true} {
		if shedding {
			r.engine.Evaluate(context.Background())
		}
		if allocs := testing.AllocsPerRun(1000, func() {
			c.rc.Response.Header.ResetConnectionClose()
			_ = h(c)
		}); allocs != 0 {
			t.Fatalf("shedding %v: %v allocations per request, want 0", shedding, allocs)
		}
	}
	if got := r.Status().Shed; got != 1001 {
		t.Fatalf("%d connections shed, want 1001: every request of the shedding run", got)
	}
}
