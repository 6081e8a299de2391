package upstreampick

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/prometheus/client_golang/prometheus"
)

// site is an upstream on 127.0.0.1 answering with its name, the path and the query.
func site(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name+" "+r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

// deadAddr returns an address on 127.0.0.1 with nothing listening (connections are refused).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// testConfig is a fast-cycling config with metrics on a private registry.
func testConfig(servers ...string) Config {
	return Config{
		Servers:        servers,
		HealthInterval: 20 * time.Millisecond,
		HealthTimeout:  10 * time.Millisecond,
		Timeout:        5 * time.Second,
		Registerer:     prometheus.NewRegistry(),
	}
}

// newPicker creates a Picker over cfg, closed when the test ends.
func newPicker(t *testing.T, cfg Config) *Picker {
	t.Helper()
	p := NewPicker(cfg)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// eventually polls cond until it holds, failing after 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func allUnhealthy(p *Picker) bool {
	for _, u := range p.Status().Upstreams {
		if u.Healthy {
			return false
		}
	}
	return true
}

// rejecting returns a Picker over cfg once its upstreams are unhealthy, so that it rejects every request.
func rejecting(t *testing.T, cfg Config) *Picker {
	t.Helper()
	p := newPicker(t, cfg)
	eventually(t, "upstreams unhealthy", func() bool { return allUnhealthy(p) })
	return p
}

// get sends GET target through h and returns the recorder.
func get(h http.Handler, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

// local is the next handler of the middleware in the tests.
var local = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "local") })

func TestNewPickerPanicsNamingTheField(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "upstreampick: Config.Servers"},
		{Config{Servers: []string{"127.0.0.1:1"}, Mode: 9}, "upstreampick: Config.Mode"},
		{Config{Servers: []string{"127.0.0.1:1"}, ConfigureClient: func(string, *http.Client) {}},
			"upstreampick: Config.ConfigureClient must be a func(server string, t *http.Transport)"},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, tt.want) {
					t.Errorf("panic %q, want %q", msg, tt.want)
				}
			}()
			tt.cfg.DisableMetrics = true
			_ = NewPicker(tt.cfg).Close()
		}()
	}
}

func TestConfigDefaultOnReject(t *testing.T) {
	w := get(ConfigDefault.OnReject, "/")
	if w.Code != http.StatusServiceUnavailable || w.Body.String() != "upstreampick: no upstream available\n" ||
		w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("status %d body %q headers %v", w.Code, w.Body, w.Header())
	}
}

func TestProxiesToEveryUpstream(t *testing.T) {
	a, b := site(t, "a"), site(t, "b")
	p := newPicker(t, testConfig(a.URL, b.URL))
	h := p.Handler()(local)
	seen := map[string]int{}
	for range 200 {
		w := get(h, "/x/y?q=1")
		name, uri, _ := strings.Cut(w.Body.String(), " ")
		if w.Code != http.StatusOK || uri != "/x/y?q=1" {
			t.Fatalf("status %d body %q", w.Code, w.Body)
		}
		seen[name]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("spread %v, want both upstreams", seen)
	}
	st := p.Status()
	if st.Admitted != 200 || st.Rejected != 0 || st.Upstreams[0].Picks+st.Upstreams[1].Picks != 200 {
		t.Fatalf("status %+v", st)
	}
	for _, u := range st.Upstreams {
		if u.InFlight != 0 {
			t.Fatalf("%s: %d in flight after every response was read", u.Server, u.InFlight)
		}
	}
}

func TestNextSkips(t *testing.T) {
	cfg := testConfig(site(t, "a").URL)
	cfg.Next = func(r *http.Request) bool { return r.URL.Path == "/local" }
	p := newPicker(t, cfg)
	if w := get(p.Handler()(local), "/local"); w.Body.String() != "local" {
		t.Fatalf("Next: body %q", w.Body)
	}
	if st := p.Status(); st.Admitted != 0 {
		t.Fatalf("a skipped request was counted: %+v", st)
	}
}

func TestRejectionHeadersAndCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(deadAddr(t))
	cfg.Registerer, cfg.Name, cfg.RetryAfter = reg, "edge", 2500*time.Millisecond
	var saw string
	cfg.OnReject = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		saw = w.Header().Get("Retry-After") + " " + w.Header().Get("Fiberguard-Rejected-By")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	p := rejecting(t, cfg)
	w := get(p.Handler()(local), "/")
	if w.Code != http.StatusTooManyRequests || saw != "3 upstreampick/edge" {
		t.Fatalf("status %d, OnReject saw %q; want OnReject after both headers", w.Code, saw)
	}
	if st := p.Status(); st.Rejected != 1 || st.Admitted != 0 {
		t.Fatalf("status %+v, want 1 rejected", st)
	}
	if got := rejectedMetric(t, reg); got != 1 {
		t.Fatalf("rejected metric %v, want 1", got)
	}

	cfg = testConfig(deadAddr(t))
	cfg.RetryAfter = -1
	w = get(rejecting(t, cfg), "/")
	if _, ok := w.Header()["Retry-After"]; ok || w.Header().Get("Fiberguard-Rejected-By") != "upstreampick/default" ||
		w.Code != http.StatusServiceUnavailable {
		t.Fatalf("negative RetryAfter: status %d headers %v", w.Code, w.Header())
	}
}

// rejectedMetric returns requests_total{decision="rejected"} of reg.
func rejectedMetric(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fiberguard_upstreampick_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "decision" && l.GetValue() == "rejected" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatal("no requests_total{decision=\"rejected\"} series")
	return 0
}

// TestOwnReverseProxy: Rewrite, Transport and ErrorHandler make a ReverseProxy of one's own; a request nothing
// can take is answered through Reject and counted once.
func TestOwnReverseProxy(t *testing.T) {
	a := site(t, "a")
	p := newPicker(t, testConfig(a.URL))
	rp := &httputil.ReverseProxy{Rewrite: p.Rewrite, Transport: p.Transport(), ErrorHandler: p.ErrorHandler}
	if w := get(rp, "/own"); w.Code != http.StatusOK || w.Body.String() != "a /own" {
		t.Fatalf("status %d body %q", w.Code, w.Body)
	}

	q := rejecting(t, testConfig(deadAddr(t)))
	rp = &httputil.ReverseProxy{Rewrite: q.Rewrite, Transport: q.Transport(), ErrorHandler: q.ErrorHandler}
	w := get(rp, "/")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Fiberguard-Rejected-By") != "upstreampick/default" {
		t.Fatalf("status %d headers %v", w.Code, w.Header())
	}
	if st := q.Status(); st.Rejected != 1 {
		t.Fatalf("rejected %d, want 1: Rewrite counted it, Reject does not count it again", st.Rejected)
	}
	// A request that went through no Rewrite is counted by Reject, each time.
	q.Reject(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if st := q.Status(); st.Rejected != 2 {
		t.Fatalf("rejected %d, want 2", st.Rejected)
	}
	if _, err := q.Transport().RoundTrip(httptest.NewRequest(http.MethodGet, "/", nil)); !errors.Is(err, ErrNoUpstream) {
		t.Fatalf("RoundTrip without Rewrite: %v, want ErrNoUpstream", err)
	}
}

func TestHandlerErrors(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	cfg := testConfig(slow.URL)
	cfg.Timeout = 50 * time.Millisecond
	if w := get(newPicker(t, cfg), "/"); w.Code != http.StatusGatewayTimeout {
		t.Fatalf("slow upstream: status %d, want 504", w.Code)
	}

	// An upstream that accepts, reads the request and hangs up.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 4096))
			_ = c.Close()
		}
	})
	defer wg.Wait()
	defer func() { _ = ln.Close() }()
	cfg = testConfig(ln.Addr().String())
	cfg.Retries = -1
	if w := get(newPicker(t, cfg), "/"); w.Code != http.StatusBadGateway {
		t.Fatalf("hanging-up upstream: status %d, want 502", w.Code)
	}
}

// TestDeadUpstreamAttractsNoTraffic: a request whose upstream refuses the connection goes to another one, and
// the refusing upstream soon gets nothing.
func TestDeadUpstreamAttractsNoTraffic(t *testing.T) {
	a, dead := site(t, "a"), deadAddr(t)
	cfg := testConfig(a.URL, dead)
	cfg.HealthInterval, cfg.HealthTimeout = time.Hour, time.Second // only proxied failures count after round one
	p := newPicker(t, cfg)
	h := p.Handler()(local)
	for i := range 100 {
		if w := get(h, "/"); w.Code != http.StatusOK || w.Body.String() != "a /" {
			t.Fatalf("request %d: status %d body %q; connection failures must be retried elsewhere", i, w.Code, w.Body)
		}
	}
	for _, u := range p.Status().Upstreams {
		if u.Server == dead && (u.Healthy || u.Active || u.Picks > 2) {
			t.Fatalf("dead upstream %+v, want unhealthy, inactive, picked at most twice", u)
		}
	}
}

// TestDrainWaitsForRequestsInFlight: a server SetServers removes gets no new request and is forgotten once its
// request in flight has finished (its response body closed).
func TestDrainWaitsForRequestsInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(started)
			<-release
		}
		_, _ = io.WriteString(w, "held")
	}))
	defer held.Close()
	b := site(t, "b")
	p := newPicker(t, testConfig(held.URL))
	h := p.Handler()(local)
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- get(h, "/hold") }()
	<-started
	if err := p.SetServers([]string{b.URL}); err != nil {
		t.Fatal(err)
	}
	if w := get(h, "/"); w.Body.String() != "b /" {
		t.Fatalf("a new request went to %q, want b", w.Body)
	}
	// Health rounds reap drained upstreams; the busy one must outlive a few. Nothing to poll for: the test
	// asserts that something does not happen, so it lets the rounds run.
	time.Sleep(3 * testConfig().HealthInterval)
	if st := p.Status(); len(st.Upstreams) != 2 || !st.Upstreams[1].Draining || st.Upstreams[1].InFlight != 1 {
		t.Fatalf("status %+v, want the removed upstream draining with 1 in flight", st.Upstreams)
	}
	close(release)
	if w := <-done; w.Body.String() != "held" {
		t.Fatalf("held request: %q", w.Body)
	}
	eventually(t, "drained upstream forgotten", func() bool { return len(p.Status().Upstreams) == 1 })
}

// fakeResolver answers LookupHost with the addresses set for a host.
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]string
}

func (r *fakeResolver) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts[host] = addrs
}

func (r *fakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) LookupSRV(context.Context, string, string, string) (string, []*net.SRV, error) {
	return "", nil, errors.New("no SRV here")
}

// TestDiscover: the upstreams a core.DNS name resolves to get the traffic.
func TestDiscover(t *testing.T) {
	a := site(t, "a")
	_, port, _ := net.SplitHostPort(a.Listener.Addr().String())
	res := &fakeResolver{hosts: map[string][]string{}}
	res.set("api.test", "127.0.0.1")
	cfg := testConfig()
	cfg.Resolver = res
	cfg.Discover = []core.Discovery{core.DNS("http://api.test:"+port, 50*time.Millisecond)}
	p := newPicker(t, cfg)
	if w := get(p, "/d"); w.Code != http.StatusOK || w.Body.String() != "a /d" {
		t.Fatalf("status %d body %q", w.Code, w.Body)
	}
	if st := p.Status(); len(st.Discovery) != 1 || len(st.Upstreams) != 1 || st.Upstreams[0].Discovered == "" {
		t.Fatalf("status %+v", st)
	}
}

// TestConfigureClient: each upstream's transport goes through ConfigureClient, and a dialer set there carries
// the requests.
func TestConfigureClient(t *testing.T) {
	a := site(t, "a")
	var mu sync.Mutex
	var servers []string
	dials := 0
	cfg := testConfig(a.URL)
	cfg.ConfigureClient = func(server string, tr *http.Transport) {
		mu.Lock()
		servers = append(servers, server)
		mu.Unlock()
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	p := newPicker(t, cfg)
	if w := get(p, "/"); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(servers) != 1 || servers[0] != a.URL || dials != 1 {
		t.Fatalf("ConfigureClient saw %v, its dialer dialled %d times; want %s and 1", servers, dials, a.URL)
	}
}

// TestContextStopsTheHealthGoroutine: cancelling Config.Context unregisters the metrics and leaves no goroutine
// (TestMain checks), for New, which returns no handle.
func TestContextStopsTheHealthGoroutine(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig(site(t, "a").URL)
	cfg.Registerer, cfg.Context = reg, ctx
	h := New(cfg)(local)
	if w := get(h, "/"); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	cancel()
	eventually(t, "metrics unregistered", func() bool {
		mfs, _ := reg.Gather()
		return len(mfs) == 0
	})
	// Requests are still answered through the last pickable set.
	if w := get(h, "/"); w.Code != http.StatusOK {
		t.Fatalf("after cancel: status %d", w.Code)
	}
}

// TestCloseConcurrentWithRequests: Close during requests, and requests after it, are safe (-race) and answered.
func TestCloseConcurrentWithRequests(t *testing.T) {
	p := newPicker(t, testConfig(site(t, "a").URL, site(t, "b").URL))
	h := p.Handler()(local)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if w := get(h, "/"); w.Code != http.StatusOK {
					t.Errorf("status %d", w.Code)
					return
				}
			}
		})
	}
	_ = p.Close()
	_ = p.Close()
	wg.Wait()
}

// TestHandlerCallsAreEquivalent: every Handler call is the same middleware over the one Picker.
func TestHandlerCallsAreEquivalent(t *testing.T) {
	p := newPicker(t, testConfig(site(t, "a").URL))
	for _, mw := range []func(http.Handler) http.Handler{p.Handler(), p.Handler()} {
		if w := get(mw(local), "/"); w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
	}
	if st := p.Status(); st.Admitted != 2 || st.Upstreams[0].Picks != 2 {
		t.Fatalf("status %+v, want both handlers counted on the one Picker", st)
	}
}

// TestRejectAllocatesNothing: the default answer when nothing is pickable, both headers included, allocates
// nothing.
func TestRejectAllocatesNothing(t *testing.T) {
	cfg := testConfig(deadAddr(t))
	p := rejecting(t, cfg)
	h := p.Handler()(local)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &discard{h: http.Header{}}
	if allocs := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); allocs != 0 {
		t.Fatalf("%v allocations per rejected request, want 0", allocs)
	}
	if got := w.h.Get("Retry-After") + " " + strconv.Itoa(w.code); got != "1 503" {
		t.Fatalf("answer %q", got)
	}
}

// discard is a ResponseWriter that keeps its headers and status only.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }
