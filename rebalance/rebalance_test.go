package rebalance

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	if connectionClose {
		ctx.Request.Header.SetConnectionClose()
	}
	app.Handler()(&ctx)
	if ctx.Response.StatusCode() != fiber.StatusOK || string(ctx.Response.Body()) != "ok" {
		t.Fatalf("response %d %q, want 200 ok", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return ctx.Response.ConnectionClose()
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

func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		src := func(context.Context) (Cluster, error) {
			calls.Add(1)
			return Cluster{Average: 40, Nodes: 3}, nil
		}
		r := NewRebalancer(testConfig(src, 60))
		synctest.Wait()
		if calls.Load() != 1 || r.Status().Decision != DecisionShedding {
			t.Fatalf("after start: %d readings, state %s; want the first reading at once", calls.Load(), r.Status().Decision)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if calls.Load() != 11 {
			t.Fatalf("after 10 intervals: %d readings, want 11", calls.Load())
		}
		r.Close()
		r.Close() // idempotent
		if r.budget.Load() != 0 {
			t.Fatal("budget left after Close")
		}
		time.Sleep(10 * time.Second)
		if calls.Load() != 11 {
			t.Fatalf("%d readings after Close, want none", calls.Load()-11)
		}
	})
}

func TestLoopStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cfg := testConfig(fixed(40, 3), 60)
		cfg.Context = ctx
		r := NewRebalancer(cfg)
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case <-r.done:
		default:
			t.Fatal("loop still running after Config.Context ended")
		}
		if r.budget.Load() != 0 {
			t.Fatal("budget left after the loop ended")
		}
	})
}

func TestHungSourceTimesOutAfterOneInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := func(ctx context.Context) (Cluster, error) {
			<-ctx.Done() // a Prometheus that never answers
			return Cluster{}, ctx.Err()
		}
		r := NewRebalancer(testConfig(src, 60))
		defer r.Close()
		start := time.Now()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		st := r.Status()
		if st.Decision != DecisionSourceError || st.SourceErrors != 1 || !st.UpdatedAt.Equal(start.Add(time.Second)) {
			t.Fatalf("status %+v, want one source error at 1 s", st)
		}
	})
}

func TestAppShutdownStopsTheLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	r := NewRebalancer(Config{Cluster: fixed(40, 3), App: app, Registerer: prometheus.NewRegistry()})
	app.Use(r.Handler())
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	// Shut down only once the server serves: a Shutdown that comes before Serve would not stop it.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
	if err := app.Shutdown(); err != nil {
		t.Fatal(err)
	}
	<-served
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("loop still running 10 s after the app shut down")
	}
}

// TestRealConnections serves real keep-alive clients over TCP: the node counts them from the app's server, and
// a shed answers its request normally and closes only that connection.
func TestRealConnections(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	const clients = 4
	// The cluster averages 2.5 connections per node: this node, holding 4, is at balance 0.6 and sheds
	// min(4 - 2.5, ceil(2.5 * 0.5)) = 1 connection per interval.
	cfg := configDefault(Config{
		Cluster:        fixed(2.5, 2),
		App:            app,
		ShedRate:       0.5,
		MinConnections: 1,
		Registerer:     prometheus.NewRegistry(),
	})
	r := newRebalancer(cfg)
	app.Use(r.Handler())
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	url := serve(t, app)
	var (
		mu    sync.Mutex
		dials int
	)
	transports := make([]*http.Transport, clients)
	for i := range transports {
		transports[i] = &http.Transport{
			MaxIdleConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				mu.Lock()
				dials++
				mu.Unlock()
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
		}
		defer transports[i].CloseIdleConnections()
	}
	get := func(tr *http.Transport) (closed bool) {
		t.Helper()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			t.Fatalf("request failed: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("response %d %q %v, want 200 ok", resp.StatusCode, body, err)
		}
		return resp.Close
	}
	for _, tr := range transports {
		get(tr)
	}
	waitFor(t, func() bool { return app.Server().GetOpenConnectionsCount() == clients })

	r.tick(context.Background())
	if st := r.Status(); st.Connections != clients || st.Decision != DecisionShedding || st.Budget != 1 {
		t.Fatalf("status %+v, want %d connections, shedding 1", st, clients)
	}
	closed := 0
	for _, tr := range transports {
		if get(tr) {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d responses carried Connection: close, want 1", closed)
	}
	waitFor(t, func() bool { return app.Server().GetOpenConnectionsCount() == clients-1 })

	// The shed client reconnects on its next request; the others keep their connections.
	for _, tr := range transports {
		if get(tr) {
			t.Fatal("a response closed its connection with the budget spent")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if dials != clients+1 {
		t.Fatalf("%d dials, want %d: one reconnect for the one shed connection", dials, clients+1)
	}
}

// waitFor polls cond, for state that the kernel and the server's goroutines settle (a closed TCP connection).
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

// TestServerLearnedFromTheFirstRequest: without Config.App and Config.Connections the count comes from the server
// of the app that serves the first request.
func TestServerLearnedFromTheFirstRequest(t *testing.T) {
	r := newRebalancer(configDefault(Config{Cluster: fixed(40, 3), Registerer: prometheus.NewRegistry()}))
	app := newApp(r.Handler())
	url := serve(t, app)
	if got := r.localConnections(); got != 0 {
		t.Fatalf("%d connections before the first request, want 0", got)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	// Read to the end: net/http closes a connection whose body is closed unread, and the server could see that
	// close before the count is read. The server counts a connection when it accepts it, before the handler
	// runs, so once the response is here the count includes it.
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.localConnections(); got != 1 {
		t.Fatalf("%d connections with one keep-alive client, want 1", got)
	}
	tr.CloseIdleConnections()
	waitFor(t, func() bool { return r.localConnections() == 0 })
}

// serve runs app on a free 127.0.0.1 port until the test ends and returns its URL. Requests must reach it before
// the test ends: a Shutdown that comes before Serve would not stop it.
func serve(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		_ = app.Shutdown()
		<-served
	})
	return "http://" + ln.Addr().String() + "/"
}
