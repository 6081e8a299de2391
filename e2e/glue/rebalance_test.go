package glue

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rebalancehttp "github.com/fiberguard/fiberguard/nethttp/rebalance"
	rebalancev2 "github.com/fiberguard/fiberguard/rebalance"
	"github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/fiberguard/fiberguard/rebalance/core/fiberglue"
	rebalancev3 "github.com/fiberguard/fiberguard/v3/rebalance"
	fiberv2 "github.com/gofiber/fiber/v2"
	fiberv3 "github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// rebalanceAdapter is the rebalance adapter of one version; A is the type of its Config.App.
type rebalanceAdapter[C fiberglue.Ctx, H ~func(C) error, A any] struct {
	New           func(config ...core.Config[C, A]) H
	NewRebalancer func(config ...core.Config[C, A]) rebalancer[H]
	ConfigDefault defaults[core.Config[C, A]]
}

// rebalancer is a version's Rebalancer: fiberglue's for Fiber, the net/http adapter's for net/http.
type rebalancer[H any] interface {
	Handler() H
	Status() core.Status
	Close() error
}

var (
	rebalanceV2 = rebalanceAdapter[*fiberv2.Ctx, fiberv2.Handler, *fiberv2.App]{rebalancev2.New,
		func(config ...rebalancev2.Config) rebalancer[fiberv2.Handler] {
			return rebalancev2.NewRebalancer(config...)
		},
		fiberDefaults(&rebalancev2.ConfigDefault)}
	rebalanceV3 = rebalanceAdapter[fiberv3.Ctx, fiberv3.Handler, *fiberv3.App]{rebalancev3.New,
		func(config ...rebalancev3.Config) rebalancer[fiberv3.Handler] {
			return rebalancev3.NewRebalancer(config...)
		},
		fiberDefaults(&rebalancev3.ConfigDefault)}
	rebalanceNet = rebalanceAdapter[*httpCtx, httpHandler, *http.Server]{
		func(config ...core.Config[*httpCtx, *http.Server]) httpHandler {
			return middleware(rebalancehttp.New(convertConfigs[rebalancehttp.Config](config)...))
		},
		func(config ...core.Config[*httpCtx, *http.Server]) rebalancer[httpHandler] {
			return rebalanceHTTP{rebalancehttp.NewRebalancer(convertConfigs[rebalancehttp.Config](config)...)}
		},
		httpDefaults[core.Config[*httpCtx, *http.Server]](&rebalancehttp.ConfigDefault)}
)

// rebalanceHTTP is the net/http Rebalancer with its middleware in the net/http version's chain.
type rebalanceHTTP struct{ *rebalancehttp.Rebalancer }

func (r rebalanceHTTP) Handler() httpHandler { return middleware(r.Rebalancer.Handler()) }

func TestRebalance(t *testing.T) {
	each(t, rebalanceV2, rebalanceV3, rebalanceNet,
		func(t *testing.T, a rebalanceAdapter[*fiberv2.Ctx, fiberv2.Handler, *fiberv2.App]) {
			rebalanceSuite(t, v2, a)
		},
		func(t *testing.T, a rebalanceAdapter[fiberv3.Ctx, fiberv3.Handler, *fiberv3.App]) {
			rebalanceSuite(t, v3, a)
		},
		func(t *testing.T, a rebalanceAdapter[*httpCtx, httpHandler, *http.Server]) {
			rebalanceSuite(t, netHTTP, a)
		})
}

// TestRebalanceFasthttp is what the Fiber adapters do with fasthttp: count the connections of its server, and
// leave unshed a response its handler closes through fasthttp. The net/http adapter counts through
// http.Server.ConnState instead, and decides before its handler runs (nethttp/rebalance's tests).
func TestRebalanceFasthttp(t *testing.T) {
	both(t, rebalanceV2, rebalanceV3,
		func(t *testing.T, a rebalanceAdapter[*fiberv2.Ctx, fiberv2.Handler, *fiberv2.App]) {
			rebalanceFasthttpSuite(t, v2, a)
		},
		func(t *testing.T, a rebalanceAdapter[fiberv3.Ctx, fiberv3.Handler, *fiberv3.App]) {
			rebalanceFasthttpSuite(t, v3, a)
		})
}

// rebalanceShedding is a config of a node with 60 connections in a cluster averaging 40, which sheds
// ceil(40 * 0.05) = 2 connections per interval; one interval lasts the whole test.
func rebalanceShedding[C, A any](src core.ClusterSource) core.Config[C, A] {
	return core.Config[C, A]{
		Cluster:        src,
		Connections:    func() int { return 60 },
		Interval:       10 * time.Minute,
		ShedRate:       0.05,
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}
}

// rebalanceApp puts h in front of ap and a route answering "ok".
func rebalanceApp[C any, H ~func(C) error, P app[C, H]](fv version[C, H], ap P, h H) P {
	ap.Use(h)
	ap.Get("/", func(c C) error { return fv.send(c, http.StatusOK, "ok") })
	return ap
}

// rebalanceStarted waits for the first interval to end.
func rebalanceStarted[H any](t *testing.T, r rebalancer[H]) {
	t.Helper()
	rebalanceWait(t, func() bool { return r.Status().UpdatedAt != nil })
}

// rebalanceSuite proves the adapter's glue through real apps of its version; the core's tests hold the
// decision, the loop and the handler's logic over a fake context.
func rebalanceSuite[C fiberglue.Ctx, H ~func(C) error, A any](t *testing.T, fv version[C, H], a rebalanceAdapter[C, H, A]) {
	shedding := rebalanceShedding[C, A]
	newApp := func(h H) app[C, H] { return rebalanceApp(fv, fv.newApp(), h) }
	started := rebalanceStarted[H]

	t.Run("spends the budget of the interval", func(t *testing.T) {
		release := make(chan struct{})
		r := a.NewRebalancer(shedding(func(ctx context.Context) (core.Cluster, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return core.Cluster{Average: 40, Nodes: 3}, nil
		}))
		defer r.Close()
		ap := newApp(r.Handler())
		if got := rebalanceCloses(t, ap, 5); got != 0 {
			t.Fatalf("before the first interval: %d responses closed, want 0", got)
		}
		close(release)
		started(t, r)
		st := r.Status()
		if st.Decision != core.DecisionShedding || st.Budget != 2 || st.Balance != 0.5 || st.Average != 40 || st.Nodes != 3 {
			t.Fatalf("status %+v, want shedding with budget 2 at balance 0.5", st)
		}
		if got := rebalanceCloses(t, ap, 5); got != 2 {
			t.Fatalf("%d of 5 responses closed, want the budget of 2", got)
		}
		if st := r.Status(); st.Shed != 2 {
			t.Fatalf("Shed = %d, want 2", st.Shed)
		}
	})

	t.Run("closing and skipped requests are not shed", func(t *testing.T) {
		cfg := shedding(rebalanceFixed(40, 3))
		cfg.Next = func(c C) bool { return fv.header(c, "X-Skip") != "" }
		r := a.NewRebalancer(cfg)
		defer r.Close()
		ap := newApp(r.Handler())
		started(t, r)
		for range 3 {
			if _, err := rebalanceRequest(ap, "/", true, nil); err != nil { // closes anyway: must not use the budget
				t.Fatal(err)
			}
		}
		for range 3 {
			closed, err := rebalanceRequest(ap, "/", false, map[string]string{"X-Skip": "1"})
			if err != nil {
				t.Fatal(err)
			}
			if closed {
				t.Fatal("a request skipped by Next was shed")
			}
		}
		if got := rebalanceCloses(t, ap, 5); got != 2 {
			t.Fatalf("%d responses closed after closing and skipped requests, want the whole budget of 2", got)
		}
		if st := r.Status(); st.Shed != 2 {
			t.Fatalf("Shed = %d, want 2", st.Shed)
		}
	})

	t.Run("New mounts the Rebalancer", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := shedding(rebalanceFixed(40, 3))
		cfg.Context = ctx
		reg := cfg.Registerer.(*prometheus.Registry)
		ap := newApp(a.New(cfg))
		rebalanceWait(t, func() bool { return rebalanceMetrics(t, reg, "default")["fiberguard_rebalance_balance"] == 0.5 })
		if got := rebalanceCloses(t, ap, 5); got != 2 {
			t.Fatalf("%d of 5 responses closed, want the budget of 2", got)
		}
		cancel()
		rebalanceWait(t, func() bool { return len(rebalanceMetrics(t, reg, "default")) == 0 })
	})

	// The metrics are registered on Config.Registerer under Config.Name, count the connections the adapter
	// reads, and go with Close.
	t.Run("metrics", func(t *testing.T) {
		cfg := shedding(rebalanceFixed(40, 3))
		cfg.Name = "api"
		reg := cfg.Registerer.(*prometheus.Registry)
		r := a.NewRebalancer(cfg)
		ap := newApp(r.Handler())
		started(t, r)
		rebalanceCloses(t, ap, 3)
		want := map[string]float64{
			"fiberguard_rebalance_open_connections":    60,
			"fiberguard_rebalance_cluster_average":     40,
			"fiberguard_rebalance_cluster_nodes":       3,
			"fiberguard_rebalance_balance":             0.5,
			"fiberguard_rebalance_shed_total":          2,
			"fiberguard_rebalance_source_errors_total": 0,
		}
		got := rebalanceMetrics(t, reg, "api")
		if len(got) != len(want) {
			t.Fatalf("metrics %v, want %v", got, want)
		}
		for name, v := range want {
			if got[name] != v {
				t.Fatalf("%s = %v, want %v (all: %v)", name, got[name], v, got)
			}
		}
		r.Close()
		if got := rebalanceMetrics(t, reg, "api"); len(got) != 0 {
			t.Fatalf("metrics after Close: %v", got)
		}
	})

	// NewRebalancer validates with the core's messages (the core's tests hold the full table).
	t.Run("invalid config panics naming the field", func(t *testing.T) {
		src := rebalanceFixed(1, 1)
		for _, tt := range []struct {
			field string
			cfg   core.Config[C, A]
		}{
			{"Config.PrometheusURL or Config.Cluster", core.Config[C, A]{}},
			{"Config.PrometheusURL", core.Config[C, A]{PrometheusURL: "prometheus:9090"}},
			{"Config.TimestampQuery", core.Config[C, A]{PrometheusURL: "http://p:9090", Query: "x"}},
			{"Config.Interval", core.Config[C, A]{Cluster: src, Interval: 1}}, // 1 ns, meant as 1 s
			{"Config.Target", core.Config[C, A]{Cluster: src, Target: 0.3}},
			{"Config.Window", core.Config[C, A]{Cluster: src, Window: -time.Second}},
			{"Config.Name", core.Config[C, A]{Cluster: src, Name: "api\xff"}},
		} {
			t.Run(tt.field, func(t *testing.T) {
				tt.cfg.DisableMetrics = true // a config that passes by mistake must not clash on the default registry
				defer func() {
					msg, _ := recover().(string)
					if !strings.HasPrefix(msg, "rebalance: "+tt.field) {
						t.Fatalf("panic %q, want one naming %s", msg, tt.field)
					}
				}()
				r := a.NewRebalancer(tt.cfg)
				r.Close() // reached only when the config was accepted
			})
		}
	})

	// The zero fields come from ConfigDefault as it is when NewRebalancer runs.
	t.Run("ConfigDefault is read at the call", func(t *testing.T) {
		a.ConfigDefault.edit(t, func(d *core.Config[C, A]) { d.Name = "site" })
		r := a.NewRebalancer(core.Config[C, A]{Cluster: rebalanceFixed(40, 3), DisableMetrics: true})
		defer r.Close()
		if got := r.Status().Name; got != "site" {
			t.Fatalf("Name = %q, want ConfigDefault's site", got)
		}
	})

	// The loop stops when Config.App shuts down (its metrics go with it).
	t.Run("app shutdown stops the loop", func(t *testing.T) {
		ap := fv.newApp()
		reg := prometheus.NewRegistry()
		r := a.NewRebalancer(core.Config[C, A]{Cluster: rebalanceFixed(40, 3), App: ap.Instance().(A), Registerer: reg})
		defer r.Close()
		ap.Use(r.Handler())
		ap.Get("/", func(c C) error { return fv.send(c, http.StatusOK, "ok") })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- ap.Serve(ln) }()
		// Shut down only once the server serves: a Shutdown that comes before Serve would not stop it.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		started(t, r)
		if err := ap.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if err := <-served; err != nil {
			t.Fatalf("Serve = %v after Shutdown, want nil", err)
		}
		rebalanceWait(t, func() bool { return len(rebalanceMetrics(t, reg, "default")) == 0 })
	})

	// Config.Context reaches the loop; the handler keeps answering, unshed.
	t.Run("context stops the loop", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := shedding(rebalanceFixed(40, 3))
		cfg.Context = ctx
		reg := cfg.Registerer.(*prometheus.Registry)
		r := a.NewRebalancer(cfg)
		defer r.Close()
		ap := newApp(r.Handler())
		started(t, r)
		cancel()
		rebalanceWait(t, func() bool { return len(rebalanceMetrics(t, reg, "default")) == 0 })
		if got := rebalanceCloses(t, ap, 5); got != 0 {
			t.Fatalf("%d responses closed after Config.Context ended, want 0", got)
		}
	})

	// Close, called several times at once while requests are served, returns nil each time; every request is
	// answered, and those after Close pass through without a shed.
	t.Run("Close concurrent with requests", func(t *testing.T) {
		cfg := shedding(rebalanceFixed(40, 3))
		reg := cfg.Registerer.(*prometheus.Registry)
		r := a.NewRebalancer(cfg)
		ap := newApp(r.Handler())
		started(t, r)

		stop := make(chan struct{})
		var served sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			served.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := rebalanceRequest(ap, "/", false, nil); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		var closers sync.WaitGroup
		closed := make(chan error, 3)
		for range 3 {
			closers.Go(func() { closed <- r.Close() })
		}
		closers.Wait()
		close(stop)
		served.Wait()
		close(errs)
		close(closed)
		for err := range errs {
			t.Fatalf("request during Close: %v", err)
		}
		for err := range closed {
			if err != nil {
				t.Fatalf("Close = %v, want nil", err)
			}
		}
		if got := rebalanceMetrics(t, reg, "default"); len(got) != 0 {
			t.Fatalf("metrics after Close returned: %v: the loop still runs", got)
		}
		if got := rebalanceCloses(t, ap, 5); got != 0 {
			t.Fatalf("%d responses closed after Close, want 0", got)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("Close again = %v, want nil", err)
		}
	})

	// The request path allocates nothing, whether it passes a request through or sheds its connection (the
	// benchmarks' -benchmem figures, as a test that fails).
	t.Run("allocates nothing", func(t *testing.T) {
		for _, tt := range []struct {
			name     string
			shedding bool
			shed     uint64
		}{{"passthrough", false, 0}, {"shedding", true, 1002}} {
			t.Run(tt.name, func(t *testing.T) {
				r := rebalanceAfterOneInterval(t, a, tt.shedding)
				defer r.Close()
				cl := newApp(r.Handler()).Call("/")
				cl.Do() // the app's first request warms its pools
				if allocs := testing.AllocsPerRun(1000, cl.Do); allocs != 0 {
					t.Fatalf("%v allocations per request, want 0", allocs)
				}
				if got := r.Status().Shed; got != tt.shed {
					t.Fatalf("%d connections shed, want %d: every request of the run", got, tt.shed)
				}
				if closed, _ := cl.Header("Connection"); tt.shedding && closed != "close" {
					t.Fatal("the shed response has no Connection: close")
				}
			})
		}
	})
}

// rebalanceFasthttpSuite is what the Fiber adapters do with fasthttp, see TestRebalanceFasthttp.
func rebalanceFasthttpSuite[C fiberglue.Ctx, H ~func(C) error, A any](t *testing.T, fv version[C, H], a rebalanceAdapter[C, H, A]) {
	newApp := func(h H) fiberApp[C, H] { return rebalanceApp(fv, fv.newFiberApp(), h) }
	started := rebalanceStarted[H]

	// A handler that closes its response's connection itself: that connection is not shed.
	t.Run("closing handlers are not shed", func(t *testing.T) {
		r := a.NewRebalancer(rebalanceShedding[C, A](rebalanceFixed(40, 3)))
		defer r.Close()
		ap := newApp(r.Handler())
		ap.Get("/bye", func(c C) error {
			fv.fasthttp(c).SetConnectionClose()
			return fv.send(c, http.StatusOK, "ok")
		})
		started(t, r)
		for range 3 {
			if _, err := rebalanceRequest(ap, "/bye", false, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := rebalanceCloses(t, ap, 5); got != 2 {
			t.Fatalf("%d responses closed after closing requests, want the whole budget of 2", got)
		}
		if st := r.Status(); st.Shed != 2 {
			t.Fatalf("Shed = %d, want 2", st.Shed)
		}
	})

	// Real keep-alive clients over TCP: the node counts them from Config.App's server, and a shed answers its
	// request normally and closes only that connection.
	t.Run("real connections", func(t *testing.T) {
		ap := fv.newFiberApp()
		// The Rebalancer starts once the clients are connected, so that its one interval counts them all.
		var mw atomic.Pointer[H]
		ap.Use(H(func(c C) error {
			if h := mw.Load(); h != nil {
				return (*h)(c)
			}
			return fv.next(c)
		}))
		ap.Get("/", func(c C) error { return fv.send(c, http.StatusOK, "ok") })
		url := rebalanceServe(t, ap)
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
		rebalanceWait(t, func() bool { return ap.Server().GetOpenConnectionsCount() == clients })

		// The cluster averages 2.5 connections per node: this node, holding 4, is at balance 0.6 and sheds
		// min(4 - 2.5, ceil(2.5 * 0.5)) = 1 connection in its one interval.
		r := a.NewRebalancer(core.Config[C, A]{
			Cluster:        rebalanceFixed(2.5, 2),
			App:            ap.Instance().(A),
			Interval:       10 * time.Minute,
			ShedRate:       0.5,
			MinConnections: 1,
			Registerer:     prometheus.NewRegistry(),
		})
		defer r.Close()
		h := r.Handler()
		mw.Store(&h)
		started(t, r)
		if st := r.Status(); st.Connections != clients || st.Decision != core.DecisionShedding || st.Budget != 1 {
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
		rebalanceWait(t, func() bool { return ap.Server().GetOpenConnectionsCount() == clients-1 })

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
	})

	// Without Config.App and Config.Connections the count comes from the server of the app that serves the
	// first request (read here through the open_connections gauge, which reads it live).
	t.Run("server learned from the first request", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		r := a.NewRebalancer(core.Config[C, A]{Cluster: rebalanceFixed(40, 3), Registerer: reg})
		defer r.Close()
		ap := newApp(r.Handler())
		url := rebalanceServe(t, ap)
		open := func() float64 { return rebalanceMetrics(t, reg, "default")["fiberguard_rebalance_open_connections"] }
		if got := open(); got != 0 {
			t.Fatalf("%v connections before the first request, want 0", got)
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
		if got := open(); got != 1 {
			t.Fatalf("%v connections with one keep-alive client, want 1", got)
		}
		tr.CloseIdleConnections()
		rebalanceWait(t, func() bool { return open() == 0 })
	})

}

// BenchmarkRebalance drives app.Handler() with a hand-built request, per Fiber version: bare is the app alone;
// next a middleware that only calls c.Next() (the floor of any middleware); passthrough a balanced node (no
// budget); shedding a node with budget left, every request closing its connection.
func BenchmarkRebalance(b *testing.B) {
	b.Run("fiber-v2", func(b *testing.B) { benchmarkRebalance(b, v2, rebalanceV2) })
	b.Run("fiber-v3", func(b *testing.B) { benchmarkRebalance(b, v3, rebalanceV3) })
}

func benchmarkRebalance[C fiberglue.Ctx, H ~func(C) error, A any](b *testing.B, fv version[C, H], a rebalanceAdapter[C, H, A]) {
	run := func(b *testing.B, mw H) {
		ap := fv.newFiberApp()
		if mw != nil {
			ap.Use(mw)
		}
		ap.Get("/", func(c C) error { return fv.send(c, http.StatusOK, "") })
		h := ap.Handler()
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/")
		ctx.Request.Header.SetMethod(http.MethodGet)
		b.ReportAllocs()
		for b.Loop() {
			ctx.Response.Reset()
			h(&ctx)
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, nil) })
	b.Run("next", func(b *testing.B) { run(b, H(fv.next)) })
	b.Run("passthrough", func(b *testing.B) {
		r := rebalanceAfterOneInterval(b, a, false)
		defer r.Close()
		run(b, r.Handler())
	})
	b.Run("shedding", func(b *testing.B) {
		r := rebalanceAfterOneInterval(b, a, true)
		defer r.Close()
		run(b, r.Handler())
	})
}

// rebalanceAfterOneInterval is a Rebalancer after its first interval, whose next one is 10 minutes away: balanced, with no
// budget, or shedding with a budget no run spends (2^40 connections against an average of 2^30 at ShedRate 1:
// 2^30 connections).
func rebalanceAfterOneInterval[C fiberglue.Ctx, H ~func(C) error, A any](tb testing.TB, a rebalanceAdapter[C, H, A], shedding bool) rebalancer[H] {
	tb.Helper()
	local, average := 60, 60.0
	if shedding {
		local, average = 1<<40, 1<<30
	}
	r := a.NewRebalancer(core.Config[C, A]{
		Cluster:        rebalanceFixed(average, 3),
		Connections:    func() int { return local },
		Interval:       10 * time.Minute,
		ShedRate:       1,
		MinConnections: -1,
		DisableMetrics: true,
	})
	rebalanceWait(tb, func() bool { return r.Status().UpdatedAt != nil })
	if st := r.Status(); (st.Budget > 0) != shedding {
		tb.Fatalf("status %+v, want shedding %v", st, shedding)
	}
	return r
}

// rebalanceFixed returns a ClusterSource that always reads avg over nodes.
func rebalanceFixed(avg float64, nodes int) core.ClusterSource {
	return func(context.Context) (core.Cluster, error) { return core.Cluster{Average: avg, Nodes: nodes}, nil }
}

// rebalanceRequest runs one request through ap in memory, as the server would hand it over, and reports whether
// the response closes the connection.
func rebalanceRequest[C any, H ~func(C) error](ap app[C, H], path string, connectionClose bool, header map[string]string) (closed bool, err error) {
	req := getRequest(path)
	req.Close = connectionClose
	for k, v := range header {
		req.Header.Set(k, v)
	}
	cl := ap.CallRequest(req)
	cl.Do()
	if cl.Status() != http.StatusOK || cl.Body() != "ok" {
		return false, fmt.Errorf("response %d %q, want 200 ok", cl.Status(), cl.Body())
	}
	connection, _ := cl.Header("Connection")
	return connection == "close", nil
}

// rebalanceCloses runs n requests to / and counts the responses that close their connection.
func rebalanceCloses[C any, H ~func(C) error](t *testing.T, ap app[C, H], n int) int {
	t.Helper()
	closes := 0
	for range n {
		closed, err := rebalanceRequest(ap, "/", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if closed {
			closes++
		}
	}
	return closes
}

// rebalanceMetrics returns the value of every sample in g, each of which must be labelled name=want.
func rebalanceMetrics(t *testing.T, g prometheus.Gatherer, want string) map[string]float64 {
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

// rebalanceServe runs ap on a free 127.0.0.1 port until the test ends and returns its URL. Requests must reach it
// before the test ends: a Shutdown that comes before Serve would not stop it.
func rebalanceServe[C any, H ~func(C) error](t *testing.T, ap app[C, H]) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ap.Serve(ln) }()
	t.Cleanup(func() {
		_ = ap.Shutdown()
		<-served
	})
	return "http://" + ln.Addr().String() + "/"
}

// rebalanceWait polls cond, for state that another goroutine settles (the loop, the kernel, a server).
func rebalanceWait(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
