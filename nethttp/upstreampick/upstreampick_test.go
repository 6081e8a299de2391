// The adapter's tests that every version shares run in e2e/glue (TestUpstreampick/net-http); these are the
// ones only net/http has: the Picker as an http.Handler and as the parts of a ReverseProxy of one's own, its
// retries and drains over real connections, its http.Transport.
package upstreampick

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
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

// A ConfigureClient of the Fiber adapters' type, or any other, is refused, naming the type net/http's takes.
func TestConfigureClientOfAnotherTypePanics(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
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

// The Picker is an http.Handler too: it rejects as the middleware does, a negative RetryAfter sending no
// Retry-After.
func TestPickerRejectsAsAHandler(t *testing.T) {
	cfg := testConfig(deadAddr(t))
	cfg.RetryAfter = -1
	w := get(rejecting(t, cfg), "/")
	if _, ok := w.Header()["Retry-After"]; ok || w.Header().Get("Fiberguard-Rejected-By") != "upstreampick/default" ||
		w.Code != http.StatusServiceUnavailable {
		t.Fatalf("negative RetryAfter: status %d headers %v", w.Code, w.Header())
	}
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
