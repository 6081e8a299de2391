package e2e

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/fiberapp"
	"github.com/fiberguard/fiberguard/e2e/internal/haproxy"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
	"github.com/fiberguard/fiberguard/e2e/internal/promserver"
	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

const (
	// rbClients keep-alive clients, each on one connection, sending a request every 200-300 ms.
	rbClients = 120
	// rbThreshold is the middleware's default Config.Threshold; the test asserts shares within it.
	rbThreshold = 0.2
	// rbConverge bounds the time for the shares to come within the threshold once the third node is up. With the
	// defaults (ShedRate 0.005: one connection per second per node at an average of 40) the two full nodes hand
	// back 2 connections a second between them, so it takes about 15-25 s; the bound leaves room for a loaded CI.
	rbConverge = 90 * time.Second
	// rbDrain is how long a request to /slow takes: how long a node stopped with one in flight drains.
	rbDrain = 3 * time.Second
	// rbName is every node's Config.Name: the same on each node, as one service's nodes would have it.
	rbName = "api"
)

// TestRebalance runs three nodes behind a real HAProxy (TCP mode, leastconn), with a real Prometheus
// scraping them every second. 120 keep-alive clients connect while two nodes are up; then the third starts.
// With rebalance, every node's share comes within the threshold of the average and no request fails; without it
// (the control) the third node stays empty. Stopping one node then makes no other node shed. It runs on each
// version (Fiber v2, Fiber v3, net/http): nodes and adapter of that version.
func TestRebalance(t *testing.T) {
	itest.RequireBinary(t, "haproxy")
	itest.RequireBinary(t, "prometheus")

	fiberapp.Each(t, func(t *testing.T, fv fiberapp.Version) {
		t.Run("rebalance", func(t *testing.T) { testRebalanceOn(t, fv) })
		t.Run("control", func(t *testing.T) { testRebalanceOff(t, fv) })
	})
}

func testRebalanceOn(t *testing.T, fv fiberapp.Version) {
	appAddrs, metricsAddrs := freeAddrs(t, 3), freeAddrs(t, 3)

	// Prometheus returns once every target has been scraped: empty endpoints answer until the nodes start.
	placeholders := make([]*http.Server, 3)
	for i, a := range metricsAddrs {
		placeholders[i] = serveMetrics(t, a, prometheus.NewRegistry())
	}
	prom := promserver.Start(t, promserver.Config{Targets: metricsAddrs, ScrapeInterval: time.Second})
	for _, p := range placeholders {
		_ = p.Close()
	}

	nodes := make([]*rbNode, 3)
	for i := range 2 {
		nodes[i] = startNode(t, fv, i, appAddrs[i], metricsAddrs[i], prom.URL())
	}
	px := haproxy.Start(t, haproxy.Config{Servers: appAddrs})
	rec := &recorder{t: t, nodes: nodes}

	clients := startClients(t, px.Addr(), rbClients)
	rec.until(60*time.Second, "every client served and each node's count settled", func() bool {
		if clients.ready.Load() < rbClients {
			return false
		}
		for _, n := range nodes[:2] {
			s := n.rb.Status()
			// Counted catches up with the connections once they have lasted Config.Window.
			if s.Nodes != 2 || s.Decision != rebalancecore.DecisionBalanced || s.Counted != s.Connections || s.Counted < rbClients/4 {
				return false
			}
		}
		return true
	})
	for _, n := range nodes[:2] {
		if s := n.rb.Status(); s.Shed != 0 {
			t.Fatalf("%s shed %d connections before the third node started, want none: %+v", n.name, s.Shed, s)
		}
	}
	// Prometheus scrapes each node's series with its Config.Name as the name label.
	if v := promVector(t, prom.URL(), `fiberguard_rebalance_open_connections{name="`+rbName+`"}`); len(v) != 2 {
		t.Fatalf("series named %s: %v, want one per running node", rbName, v)
	}

	// Scale out: the third node starts empty; the balancer places only new connections.
	nodes[2] = startNode(t, fv, 2, appAddrs[2], metricsAddrs[2], prom.URL())
	start := time.Now()
	streak := 0
	rec.until(rbConverge, "every node's share within the threshold of the average", func() bool {
		if within(rec.last, rbThreshold) {
			streak++
		} else {
			streak = 0
		}
		return streak >= 3 // three seconds in a row
	})
	t.Logf("converged %.0f s after the third node started", time.Since(start).Seconds())

	// Let the shedding finish (shedding nodes go on down to the average), then stop a node.
	var before [3]uint64
	quiet := 0
	rec.until(30*time.Second, "shedding over", func() bool {
		changed := false
		for i, n := range nodes {
			if s := n.rb.Status().Shed; s != before[i] {
				before[i], changed = s, true
			}
		}
		if changed || nodes[0].rb.Status().Decision == rebalancecore.DecisionShedding ||
			nodes[1].rb.Status().Decision == rebalancecore.DecisionShedding {
			quiet = 0
			return false
		}
		quiet++
		return quiet >= 3
	})
	if f := clients.failures(); len(f) > 0 {
		t.Fatalf("%d requests failed while rebalancing (first: %s)", len(f), f[0])
	}
	if s := nodes[2].rb.Status(); s.Shed != 0 {
		t.Fatalf("the new node shed %d connections, want 0", s.Shed)
	}

	// Stop node1 with a request in flight, which keeps it draining for rbDrain, as in a rolling restart. The
	// request is answered; meanwhile node1 must drop out of the cluster reading (its scrapes fail, as its own
	// /metrics would once its listener closes), not read as a live node whose connections are going: that would
	// pull the average down and make the others shed.
	slowTr := &http.Transport{}
	defer slowTr.CloseIdleConnections()
	slow := make(chan error, 1)
	go func() {
		slow <- get(context.Background(), &http.Client{Transport: slowTr, Timeout: 10 * time.Second}, "http://"+appAddrs[0]+"/slow")
	}()
	waitUntil(t, 10*time.Second, "a slow request in flight on node1", func() bool { return nodes[0].slow.Load() > 0 })
	held := nodes[0].open()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		nodes[0].stop()
	}()
	counted := []string{}
	for draining := true; draining; {
		select {
		case <-stopped:
			draining = false
		case <-time.After(200 * time.Millisecond):
		}
		for _, s := range promVector(t, prom.URL(), rebalancecore.DefaultQuery) {
			if string(s.Metric["instance"]) == metricsAddrs[0] && int(s.Value) < held/2 {
				counted = append(counted, s.Value.String())
			}
		}
	}
	if len(counted) > 0 {
		t.Errorf("while node1 drained, the cluster reading counted it as a live node with %v connections (it held %d)", counted, held)
	}
	if err := <-slow; err != nil {
		t.Errorf("the request in flight when node1 stopped: %v", err)
	}
	sawTwo := map[int]bool{}
	rec.watch(10*time.Second, func() {
		for _, i := range []int{1, 2} {
			if nodes[i].rb.Status().Nodes == 2 {
				sawTwo[i] = true
			}
		}
	})
	for _, i := range []int{1, 2} {
		s := nodes[i].rb.Status()
		if s.Shed != before[i] {
			t.Errorf("%s shed %d connections after a node stopped, want none: %+v", nodes[i].name, s.Shed-before[i], s)
		}
		if !sawTwo[i] {
			t.Errorf("%s never saw the cluster shrink to 2 live nodes: %+v", nodes[i].name, s)
		}
	}
	if got := nodes[1].open() + nodes[2].open(); got < rbClients-2 {
		t.Errorf("the stopped node's clients did not all reconnect: %d of %d connected", got, rbClients)
	}
	f := clients.failures()
	t.Logf("requests: %d served, %d failed, all while the node stopped %q", clients.ok.Load(), len(f), f)
	clients.stop()
	rec.write("rebalance")
}

func testRebalanceOff(t *testing.T, fv fiberapp.Version) {
	appAddrs := freeAddrs(t, 3)
	nodes := make([]*rbNode, 3)
	for i := range 2 {
		nodes[i] = startNode(t, fv, i, appAddrs[i], "", "")
	}
	px := haproxy.Start(t, haproxy.Config{Servers: appAddrs})
	rec := &recorder{t: t, nodes: nodes}
	clients := startClients(t, px.Addr(), rbClients)
	rec.until(60*time.Second, "every client served", func() bool { return clients.ready.Load() == rbClients })

	nodes[2] = startNode(t, fv, 2, appAddrs[2], "", "")
	most := 0
	rec.watch(20*time.Second, func() { most = max(most, rec.last[2]) })
	if most > rbClients/20 {
		t.Fatalf("without rebalance the new node held up to %d connections, want it nearly empty (at most %d)", most, rbClients/20)
	}
	if within(rec.last, rbThreshold) {
		t.Fatalf("without rebalance the shares %v came within the threshold: the control proves nothing", rec.last)
	}
	if f := clients.failures(); len(f) > 0 {
		t.Fatalf("%d requests failed (first: %s)", len(f), f[0])
	}
	clients.stop()
	rec.write("control")
}

const (
	// The queries of a node that keeps reading the last samples of stopped targets: the values still answer,
	// and the timestamps (those of the samples themselves, which timestamp() gives and the query's own result
	// does not: Prometheus stamps it with the evaluation time) stop advancing.
	lingeringQuery          = `last_over_time(fiberguard_rebalance_open_connections[10m])`
	lingeringTimestampQuery = `max_over_time(timestamp(fiberguard_rebalance_open_connections)[10m:])`
	// lingeringMaxAge leaves room for the subquery's 1 s steps on top of the 1 s scrape interval.
	lingeringMaxAge = 5 * time.Second
)

// TestRebalanceStaleReading: a real Prometheus scrapes three exporters of fiberguard_rebalance_open_connections
// (40 each), and two nodes holding 60 connections shed against that average. Then the exporters stop. With the
// default queries the stopped targets drop out of the reading (up becomes 0, and staleness markers end their
// series): a reading of no nodes, never a fresh one. With a query that goes on answering with the last samples,
// the reading ages with those samples and MaxAge makes the node stale. Neither sheds any more. It runs on each
// version's adapter: Fiber v2, Fiber v3 and net/http.
func TestRebalanceStaleReading(t *testing.T) {
	itest.RequireBinary(t, "prometheus")
	fiberapp.Each(t, testRebalanceStaleReading)
}

func testRebalanceStaleReading(t *testing.T, fv fiberapp.Version) {

	addrs := freeAddrs(t, 3)
	exporters := make([]*http.Server, len(addrs))
	for i, a := range addrs {
		reg := prometheus.NewRegistry()
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "fiberguard_rebalance_open_connections", Help: "Open connections."})
		g.Set(40)
		reg.MustRegister(g)
		exporters[i] = serveMetrics(t, a, reg)
	}
	prom := promserver.Start(t, promserver.Config{Targets: addrs, ScrapeInterval: time.Second})

	// The lingering node's queries go through a RoundTripper of the test's: Config.RoundTripper carries them.
	lingeringTr := &http.Transport{}
	defer lingeringTr.CloseIdleConnections()
	lingeringRT := &countingRoundTripper{next: lingeringTr}

	node := func(cfg rebalancecore.Config[any, any]) rebalancer {
		cfg.PrometheusURL = prom.URL()
		cfg.Connections = func() int { return 60 } // balance 0.5 against 40
		cfg.MinConnections = 10
		cfg.DisableMetrics = true
		r := fv.NewRebalancer(nil, cfg)
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	byDefault := node(rebalancecore.Config[any, any]{})
	lingering := node(rebalancecore.Config[any, any]{Query: lingeringQuery, TimestampQuery: lingeringTimestampQuery, MaxAge: lingeringMaxAge,
		RoundTripper: lingeringRT, Name: "lingering"})

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client, err := promapi.NewClient(promapi.Config{Address: prom.URL(), RoundTripper: tr})
	if err != nil {
		t.Fatal(err)
	}
	promAPI := promv1.NewAPI(client)
	read := func(src rebalancecore.ClusterSource) rebalancecore.Cluster {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := src(ctx)
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		return r
	}
	readDefault := rebalancecore.PromQL(promAPI, rebalancecore.DefaultQuery, rebalancecore.DefaultTimestampQuery)
	readLingering := rebalancecore.PromQL(promAPI, lingeringQuery, lingeringTimestampQuery)

	waitUntil(t, 30*time.Second, "both nodes shedding against the live targets", func() bool {
		return byDefault.Status().Decision == rebalancecore.DecisionShedding && lingering.Status().Decision == rebalancecore.DecisionShedding
	})
	if r := read(readLingering); r.Nodes != 3 || r.Average != 40 || time.Since(r.At) > lingeringMaxAge {
		t.Fatalf("reading of the live targets %+v, want 40 over 3 nodes, fresh", r)
	}
	if n, s := lingeringRT.count.Load(), lingering.Status(); n < 2 || s.Name != "lingering" || s.UpdatedAt == nil {
		t.Fatalf("%d requests through Config.RoundTripper and status %+v, want the 2 queries of an interval at least, "+
			"named lingering, updated", n, s)
	}

	stopped := time.Now()
	for _, e := range exporters {
		_ = e.Close()
	}
	waitUntil(t, 30*time.Second, "the default node without nodes, the lingering one stale", func() bool {
		return byDefault.Status().Decision == rebalancecore.DecisionNoAverage && lingering.Status().Decision == rebalancecore.DecisionStale
	})

	// Why, from Prometheus itself: every target is down, the default query finds nothing, and the lingering
	// query still answers, with samples no newer than the stop.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up, _, _, err := promAPI.Query(ctx, "up", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := up.(model.Vector); !ok || len(v) != 3 || v[0].Value != 0 || v[1].Value != 0 || v[2].Value != 0 {
		t.Fatalf("up = %v, want 0 for the three stopped targets", up)
	}
	if r := read(readDefault); r.Nodes != 0 {
		t.Fatalf("default reading %+v after the targets stopped, want no nodes", r)
	}
	r := read(readLingering)
	if r.Nodes != 3 || r.Average != 40 || r.At.After(stopped) || time.Since(r.At) <= lingeringMaxAge {
		t.Fatalf("lingering reading %+v, want 40 over 3 nodes as of before the stop at %v, older than %v",
			r, stopped.Format(time.StampMilli), lingeringMaxAge)
	}

	// The states hold: nothing is shed on a reading that is empty or old.
	shed := [2]uint64{byDefault.Status().Shed, lingering.Status().Shed}
	for range 3 {
		time.Sleep(time.Second)
		d, l := byDefault.Status(), lingering.Status()
		if d.Decision != rebalancecore.DecisionNoAverage || d.Nodes != 0 || d.Budget != 0 {
			t.Fatalf("default node %+v, want no_average over no nodes, no budget", d)
		}
		if l.Decision != rebalancecore.DecisionStale || l.Nodes != 3 || l.Budget != 0 {
			t.Fatalf("lingering node %+v, want stale over 3 nodes, no budget", l)
		}
		if d.Shed != shed[0] || l.Shed != shed[1] {
			t.Fatalf("shed %d and %d after the targets stopped, want none", d.Shed-shed[0], l.Shed-shed[1])
		}
	}
}

// countingRoundTripper counts the requests it carries to Prometheus.
type countingRoundTripper struct {
	next  http.RoundTripper
	count atomic.Int64
}

func (c *countingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.RoundTrip(req)
}

// waitUntil polls cond every 100 ms, failing t when it does not hold within d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %v: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promVector runs an instant query against the Prometheus at url.
func promVector(t *testing.T, url, query string) model.Vector {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client, err := promapi.NewClient(promapi.Config{Address: url, RoundTripper: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, _, err := promv1.NewAPI(client).Query(ctx, query, time.Now())
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	vector, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %s returned %s, want a vector", query, v.Type())
	}
	return vector
}

// within reports whether every node's count is within threshold of their average.
func within(counts [3]int, threshold float64) bool {
	avg := float64(counts[0]+counts[1]+counts[2]) / 3
	if avg == 0 {
		return false
	}
	for _, c := range counts {
		if math.Abs(float64(c)-avg)/avg > threshold {
			return false
		}
	}
	return true
}

// rebalancer is a rebalance.Rebalancer of one version's adapter.
type rebalancer = fiberapp.Handle[rebalancecore.Status]

// rbNode is one node of the cluster: the app behind HAProxy and, with rebalancing, the metrics endpoint
// Prometheus scrapes.
type rbNode struct {
	name    string
	app     fiberapp.App
	rb      rebalancer // nil without rebalancing
	served  chan error
	metrics *http.Server
	stopped atomic.Bool
	slow    atomic.Int64 // requests to /slow begun
}

// startNode starts node i, an app of version fv, on addr. With promURL set it rebalances with the default
// configuration (but a floor of 10, for a cluster of 120 connections) and exports its metrics on metricsAddr.
func startNode(t *testing.T, fv fiberapp.Version, i int, addr, metricsAddr, promURL string) *rbNode {
	t.Helper()
	n := &rbNode{name: fmt.Sprintf("node%d", i+1), served: make(chan error, 1)}
	n.app = fv.NewApp()
	if promURL != "" {
		reg := prometheus.NewRegistry()
		n.rb = fv.NewRebalancer(n.app, rebalancecore.Config[any, any]{
			PrometheusURL:  promURL,
			MinConnections: 10,
			Name:           rbName,
			Registerer:     reg,
		})
		n.app.Use(n.rb.Handler())
		n.metrics = serveMetrics(t, metricsAddr, reg)
	}
	n.app.Get("/", func() string { return n.name })
	n.app.Get("/slow", func() string {
		n.slow.Add(1)
		time.Sleep(rbDrain)
		return n.name
	})
	ln := listen(t, addr)
	go func() { n.served <- n.app.Serve(ln) }()
	t.Cleanup(n.stop)
	return n
}

// stop shuts the node down gracefully, as a rolling restart does. Its metrics stop answering first, as the app's
// own /metrics would once the shutdown closes its listener: while its connections drain, the node is no live
// member of the cluster.
func (n *rbNode) stop() {
	if n == nil || n.stopped.Swap(true) {
		return
	}
	if n.metrics != nil {
		_ = n.metrics.Close()
	}
	_ = n.app.Shutdown(10 * time.Second)
	<-n.served
	if n.rb != nil {
		_ = n.rb.Close()
	}
}

func (n *rbNode) open() int {
	if n == nil || n.stopped.Load() {
		return 0
	}
	return max(0, n.app.OpenConnections()) // -1 until the server serves
}

func (n *rbNode) state() string {
	if n == nil || n.stopped.Load() {
		return "down"
	}
	if n.rb == nil {
		return "up"
	}
	s := n.rb.Status()
	return fmt.Sprintf("%s/%d", s.Decision, s.Shed)
}

func serveMetrics(t *testing.T, addr string, reg *prometheus.Registry) *http.Server {
	t.Helper()
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
	ln := listen(t, addr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return srv
}

// freeAddrs picks n free 127.0.0.1 ports, each kept for one node across its restarts. They come from below the
// kernel's ephemeral range: a port in it could be taken, while a node is down, as the source port of one of the
// test's own outgoing connections, and the node could not listen again.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const from = 10000
	if low <= from+1000 {
		t.Fatalf("the ephemeral port range starts at %d: no room below it for fixed ports", low)
	}
	seen := map[int]bool{}
	out := make([]string, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no free port found in [%d, %d)", from, low)
		}
		port := from + rand.IntN(low-from)
		if seen[port] {
			continue
		}
		seen[port] = true
		addr := "127.0.0.1:" + strconv.Itoa(port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, addr)
	}
	return out
}

// listen binds addr, retrying briefly: a port just released may still be held by a closing listener.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			t.Fatalf("listen %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rbClientPool is a set of keep-alive HTTP clients, each with a transport of one connection, requesting in a loop.
type rbClientPool struct {
	ready  atomic.Int64 // clients that completed a request
	ok     atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	failed []string
}

func startClients(t *testing.T, addr string, n int) *rbClientPool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &rbClientPool{cancel: cancel}
	for i := range n {
		p.wg.Add(1)
		go p.run(ctx, "http://"+addr+"/", i)
	}
	t.Cleanup(p.stop)
	return p
}

func (p *rbClientPool) run(ctx context.Context, url string, i int) {
	defer p.wg.Done()
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	first := true
	// Stagger the first requests so that the balancer places connections one after another.
	delay := time.Duration(i) * 5 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		err := get(ctx, client, url)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.mu.Lock()
			p.failed = append(p.failed, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
			p.mu.Unlock()
		default:
			p.ok.Add(1)
			if first {
				p.ready.Add(1)
				first = false
			}
		}
		delay = 200*time.Millisecond + rand.N(100*time.Millisecond)
	}
}

func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "node") {
		return fmt.Errorf("status %d, body %q", resp.StatusCode, body)
	}
	return nil
}

func (p *rbClientPool) failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.failed...)
}

func (p *rbClientPool) stop() {
	p.cancel()
	p.wg.Wait()
}

// recorder samples each node's open connections once a second and keeps the series for the log and the results.
type recorder struct {
	t      *testing.T
	nodes  []*rbNode
	start  time.Time
	last   [3]int
	sample []string
}

func (r *recorder) take() {
	if r.start.IsZero() {
		r.start = time.Now()
	}
	var states [3]string
	for i, n := range r.nodes {
		r.last[i], states[i] = n.open(), n.state()
	}
	line := fmt.Sprintf("| %3.0f | %3d | %3d | %3d | %s | %s | %s |", time.Since(r.start).Seconds(),
		r.last[0], r.last[1], r.last[2], states[0], states[1], states[2])
	r.sample = append(r.sample, line)
	r.t.Log(line)
}

// until samples every second until cond holds, failing the test after d.
func (r *recorder) until(d time.Duration, what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		r.take()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("not reached within %s: %s (last counts %v)", d, what, r.last)
		}
		time.Sleep(time.Second)
	}
}

// watch samples every second for d, calling each after every sample.
func (r *recorder) watch(d time.Duration, each func()) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		r.take()
		each()
		time.Sleep(time.Second)
	}
}

// write appends the series to the file named by FIBERGUARD_REBALANCE_RECORD, when set.
func (r *recorder) write(name string) {
	path := os.Getenv("FIBERGUARD_REBALANCE_RECORD")
	if path == "" {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n\n| s | node1 | node2 | node3 | node1 state/shed | node2 state/shed | node3 state/shed |\n", name)
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, l := range r.sample {
		b.WriteString(l + "\n")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Errorf("record: %v", err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(b.String())
}
