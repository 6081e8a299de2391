// The adapter's tests that every version shares run in e2e/glue (TestRebalance/net-http); these are the ones
// only net/http has: HTTP/1.0 and HTTP/2 requests, connections counted through http.Server.ConnState, real
// servers.
package rebalance

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/prometheus/client_golang/prometheus"
)

// shedding is a config of a node with 60 connections in a cluster averaging 40, which sheds
// ceil(40 * 0.05) = 2 connections per interval; one interval lasts the whole test.
func shedding(src core.ClusterSource) Config {
	return Config{
		Cluster:        src,
		Connections:    func() int { return 60 },
		Interval:       10 * time.Minute,
		ShedRate:       0.05,
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}
}

// ok answers "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// started waits for the first interval to end.
func started(t *testing.T, r *Rebalancer) {
	t.Helper()
	wait(t, func() bool { return r.Status().UpdatedAt != nil })
}

// serve runs one request through h, as the server would hand it over, and reports whether its response closes
// the connection. edit adjusts the request first.
func serve(t *testing.T, h http.Handler, edit func(*http.Request)) (closed bool) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if edit != nil {
		edit(req)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("response %d %q, want 200 ok", rec.Code, rec.Body)
	}
	return rec.Header().Get("Connection") == "close"
}

// closes runs n requests through h and counts the responses that close their connection.
func closes(t *testing.T, h http.Handler, n int) int {
	t.Helper()
	c := 0
	for range n {
		if serve(t, h, nil) {
			c++
		}
	}
	return c
}

// Requests of the protocols whose connections a shed cannot close, or that close anyway, spend no budget.
func TestNotShed(t *testing.T) {
	r := NewRebalancer(shedding(fixed(40, 3)))
	defer r.Close()
	h := r.Handler()(ok)
	started(t, r)
	for _, tt := range []struct {
		name string
		edit func(*http.Request)
	}{
		// The connection closes anyway: it must not spend the budget (its own Connection: close is not ours).
		{"HTTP/1.0 without keep-alive", func(req *http.Request) {
			req.Proto, req.ProtoMinor, req.Close = "HTTP/1.0", 0, true
		}},
		{"HTTP/2", func(req *http.Request) { req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/2.0", 2, 0 }},
	} {
		for range 3 {
			if serve(t, h, tt.edit) {
				t.Fatalf("%s: the response was shed", tt.name)
			}
		}
	}
	if got := closes(t, h, 5); got != 2 {
		t.Fatalf("%d responses closed after requests that may not be shed, want the whole budget of 2", got)
	}
	if st := r.Status(); st.Shed != 2 {
		t.Fatalf("Shed = %d, want 2", st.Shed)
	}
}

// NewRebalancer validates with the core's messages (the core's tests hold the full table), before it touches
// Config.App.
func TestInvalidConfig(t *testing.T) {
	src := fixed(1, 1)
	for _, tt := range []struct {
		field string
		cfg   Config
	}{
		{"Config.PrometheusURL or Config.Cluster", Config{}},
		{"Config.PrometheusURL", Config{PrometheusURL: "prometheus:9090"}},
		{"Config.TimestampQuery", Config{PrometheusURL: "http://p:9090", Query: "x"}},
		{"Config.Interval", Config{Cluster: src, Interval: 1}}, // 1 ns, meant as 1 s
		{"Config.Target", Config{Cluster: src, Target: 0.3}},
		{"Config.Window", Config{Cluster: src, Window: -time.Second}},
		{"Config.Name", Config{Cluster: src, Name: "api\xff"}},
	} {
		t.Run(tt.field, func(t *testing.T) {
			srv := &http.Server{}
			tt.cfg.App = srv
			tt.cfg.DisableMetrics = true // a config that passes by mistake must not clash on the default registry
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "rebalance: "+tt.field) {
					t.Fatalf("panic %q, want one naming %s", msg, tt.field)
				}
				if srv.ConnState != nil {
					t.Fatal("an invalid config installed its ConnState on Config.App")
				}
			}()
			r := NewRebalancer(tt.cfg)
			_ = r.Close() // reached only when the config was accepted
		})
	}
}

// A connection counts from StateNew until it closes or is hijacked; the states between change nothing, and a
// close never seen opening cannot take the count below zero.
func TestConnState(t *testing.T) {
	r := NewRebalancer(Config{Cluster: fixed(40, 3), DisableMetrics: true})
	defer r.Close()
	for _, step := range []struct {
		state http.ConnState
		want  int
	}{
		{http.StateNew, 1}, {http.StateActive, 1}, {http.StateIdle, 1}, {http.StateNew, 2}, {http.StateActive, 2},
		{http.StateHijacked, 1}, {http.StateActive, 1}, {http.StateClosed, 0}, {http.StateClosed, 0},
		{http.StateNew, 0}, {http.StateNew, 1},
	} {
		r.ConnState(nil, step.state)
		if got := r.localConnections(); got != step.want {
			t.Fatalf("after %v: %d connections, want %d", step.state, got, step.want)
		}
	}
}

// Real keep-alive clients over TCP: the node counts them through Config.App's ConnState (the hook the user set
// there still runs), and a shed answers its request normally and closes only that connection.
func TestRealConnections(t *testing.T) {
	// The source grants one interval of shedding once armed, and then holds the next interval until the test
	// ends, so that the budget it granted is neither refilled nor withdrawn while the clients run. Before, it
	// reads a single node, which never sheds.
	var (
		armed   = make(chan struct{})
		hold    = make(chan struct{})
		granted atomic.Bool
	)
	src := func(context.Context) (core.Cluster, error) {
		select {
		case <-armed:
		default:
			return core.Cluster{Average: 2.5, Nodes: 1}, nil
		}
		if granted.CompareAndSwap(false, true) {
			// This node, holding 4, is at balance 0.6 and sheds min(4 - 2.5, ceil(2.5 * 0.5)) = 1 connection.
			return core.Cluster{Average: 2.5, Nodes: 2}, nil
		}
		<-hold // deliberately deaf to ctx: the interval lasts until the test releases it
		return core.Cluster{Average: 2.5, Nodes: 1}, nil
	}
	var userStates atomic.Int64
	srv := &http.Server{
		Handler:   ok,
		ConnState: func(net.Conn, http.ConnState) { userStates.Add(1) },
	}
	reg := prometheus.NewRegistry()
	r := NewRebalancer(Config{
		Cluster:        src,
		App:            srv,
		Interval:       100 * time.Millisecond,
		Window:         time.Nanosecond, // the current count alone
		ShedRate:       0.5,
		MinConnections: 1,
		Registerer:     reg,
	})
	defer r.Close()
	defer close(hold) // before Close waits for the held interval
	srv.Handler = r.Handler()(ok)
	url := serveHTTP(t, srv)
	open := func() float64 { return gather(t, reg, "default")["fiberguard_rebalance_open_connections"] }

	const clients = 4
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
	for _, tr := range transports {
		get(t, tr, url)
	}
	wait(t, func() bool { return open() == clients })
	if userStates.Load() == 0 {
		t.Fatal("the ConnState hook set before NewRebalancer no longer runs")
	}

	close(armed)
	wait(t, func() bool { return granted.Load() && r.Status().Decision == core.DecisionShedding })
	if st := r.Status(); st.Connections != clients || st.Budget != 1 {
		t.Fatalf("status %+v, want %d connections, shedding 1", st, clients)
	}
	closed := 0
	for _, tr := range transports {
		if get(t, tr, url) {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d responses carried Connection: close, want 1", closed)
	}
	// The server closed the shed connection after its response, and ConnState saw it go.
	wait(t, func() bool { return open() == clients-1 })

	// The shed client reconnects on its next request; the others keep their connections.
	for _, tr := range transports {
		if get(t, tr, url) {
			t.Fatal("a response closed its connection with the budget spent")
		}
	}
	wait(t, func() bool { return open() == clients })
	mu.Lock()
	defer mu.Unlock()
	if dials != clients+1 {
		t.Fatalf("%d dials, want %d: one reconnect for the one shed connection", dials, clients+1)
	}
	if st := r.Status(); st.Shed != 1 {
		t.Fatalf("Shed = %d, want 1", st.Shed)
	}
}

// Over a real server: a client that closes its connection itself is answered with its own close and spends no
// budget, and a hijacked connection leaves the count.
func TestRealClosingAndHijacked(t *testing.T) {
	r := NewRebalancer(shedding(fixed(40, 3))) // a budget of 2; the count is read from ConnState below
	defer r.Close()
	mux := http.NewServeMux()
	mux.Handle("/", ok)
	hijacked := make(chan net.Conn, 1)
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		hijacked <- c
	})
	srv := &http.Server{Handler: r.Handler()(mux), ConnState: r.ConnState}
	url := serveHTTP(t, srv)
	open := func() int64 { return r.open.Load() }
	started(t, r)

	closing := &http.Transport{DisableKeepAlives: true} // every request says Connection: close
	defer closing.CloseIdleConnections()
	for range 3 {
		if !get(t, closing, url) {
			t.Fatal("a request that said Connection: close kept its connection")
		}
	}
	wait(t, func() bool { return open() == 0 })
	if st := r.Status(); st.Shed != 0 {
		t.Fatalf("Shed = %d after closing requests, want 0", st.Shed)
	}
	// The budget is whole: the next two keep-alive requests are shed, each on its own connection.
	keep := &http.Transport{}
	defer keep.CloseIdleConnections()
	for i := range 3 {
		if closed := get(t, keep, url); closed != (i < 2) {
			t.Fatalf("request %d: closed %v, want %v", i, closed, i < 2)
		}
	}
	keep.CloseIdleConnections()
	wait(t, func() bool { return open() == 0 })

	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c := <-hijacked
	defer c.Close()
	if got := open(); got != 0 {
		t.Fatalf("%d connections with the only one hijacked, want 0", got)
	}
}

// HTTP/2 requests over a real TLS server are answered and never shed, budget or not.
func TestRealHTTP2(t *testing.T) {
	r := NewRebalancer(shedding(fixed(40, 3)))
	defer r.Close()
	ts := httptest.NewUnstartedServer(r.Handler()(ok))
	ts.EnableHTTP2 = true
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	started(t, r)
	client := ts.Client()
	defer client.CloseIdleConnections()
	for range 3 {
		resp, err := client.Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("response %d %q %v, want 200 ok", resp.StatusCode, body, err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("protocol %s, want HTTP/2", resp.Proto)
		}
		if resp.Close || resp.Header.Get("Connection") != "" {
			t.Fatal("an HTTP/2 response was shed")
		}
	}
	if st := r.Status(); st.Shed != 0 || st.Budget != 2 {
		t.Fatalf("status %+v, want the budget of 2 unspent", st)
	}
}

// Without Config.App, the user assigns ConnState to the server; the count follows its connections.
func TestConnStateWiredByHand(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRebalancer(Config{Cluster: fixed(40, 3), Registerer: reg})
	defer r.Close()
	srv := &http.Server{Handler: r.Handler()(ok), ConnState: r.ConnState}
	url := serveHTTP(t, srv)
	open := func() float64 { return gather(t, reg, "default")["fiberguard_rebalance_open_connections"] }
	if got := open(); got != 0 {
		t.Fatalf("%v connections before the first request, want 0", got)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	get(t, tr, url)
	// The server counts a connection on StateNew, before the handler runs: once the response is here, it counts.
	if got := open(); got != 1 {
		t.Fatalf("%v connections with one keep-alive client, want 1", got)
	}
	tr.CloseIdleConnections()
	wait(t, func() bool { return open() == 0 })
}

// A node whose connections nothing counts says so once, at its first request.
func TestUnwiredWarns(t *testing.T) {
	var buf bytes.Buffer
	defer log.SetOutput(log.Writer())
	log.SetOutput(&buf)

	r := NewRebalancer(Config{Cluster: fixed(40, 3), DisableMetrics: true, Name: "api"})
	defer r.Close()
	h := r.Handler()(ok)
	closes(t, h, 3)
	if got := strings.Count(buf.String(), "counting no connections"); got != 1 {
		t.Fatalf("%d warnings, want 1: %q", got, buf.String())
	}
	if !strings.Contains(buf.String(), `rebalance "api"`) {
		t.Fatalf("the warning does not name the instance: %q", buf.String())
	}

	buf.Reset()
	wired := NewRebalancer(Config{Cluster: fixed(40, 3), DisableMetrics: true})
	defer wired.Close()
	wired.ConnState(nil, http.StateNew)
	closes(t, wired.Handler()(ok), 3)
	if strings.Contains(buf.String(), "counting no connections") {
		t.Fatalf("a Rebalancer counting through ConnState warned: %q", buf.String())
	}
}

// fixed returns a core.ClusterSource that always reads avg over nodes.
func fixed(avg float64, nodes int) core.ClusterSource {
	return func(context.Context) (core.Cluster, error) { return core.Cluster{Average: avg, Nodes: nodes}, nil }
}

// get sends a GET through tr, requires 200 "ok", and reports whether the response closed its connection. The body
// is read to its end: net/http closes a connection whose body is closed unread.
func get(t *testing.T, tr *http.Transport, url string) (closed bool) {
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

// serveHTTP runs srv on a free 127.0.0.1 port until the test ends and returns its URL.
func serveHTTP(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return "http://" + ln.Addr().String() + "/"
}

// gather returns the value of every sample in g, each of which must be labelled name=want.
func gather(t *testing.T, g prometheus.Gatherer, want string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "name" || l[0].GetValue() != want {
				t.Fatalf("%s has labels %v, want name=%s", f.GetName(), l, want)
			}
			out[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

// wait polls cond, for state that another goroutine settles (the loop, the kernel, a server).
func wait(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
