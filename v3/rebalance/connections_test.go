package rebalance

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRealConnections serves real keep-alive clients over TCP: the node counts them from the app's server, and
// a shed answers its request normally and closes only that connection.
func TestRealConnections(t *testing.T) {
	app := fiber.New()
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
	app.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
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

	r.engine.Evaluate(context.Background())
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
	go func() { served <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
	t.Cleanup(func() {
		_ = app.Shutdown()
		<-served
	})
	return "http://" + ln.Addr().String() + "/"
}
