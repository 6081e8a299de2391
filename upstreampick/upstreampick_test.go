package upstreampick

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// site is an upstream HTTP server on 127.0.0.1 answering with its name.
type site struct {
	name   string
	addr   string
	srv    *fasthttp.Server
	ln     net.Listener
	once   sync.Once
	served chan struct{}
}

func startSite(t *testing.T, name string, h fasthttp.RequestHandler) *site {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		h = func(c *fasthttp.RequestCtx) { c.SetBodyString(name) }
	}
	s := &site{name: name, addr: ln.Addr().String(), ln: ln, served: make(chan struct{}),
		srv: &fasthttp.Server{Handler: h, MaxIdleWorkerDuration: 50 * time.Millisecond}}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(s.stop)
	return s
}

// stop shuts the site down and waits for Serve to return.
func (s *site) stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.ShutdownWithContext(ctx)
		// A shutdown before Serve has taken ln finds nothing to stop; closing ln ends Serve either way.
		_ = s.ln.Close()
		<-s.served
	})
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
		HealthInterval: 50 * time.Millisecond,
		HealthTimeout:  25 * time.Millisecond,
		Timeout:        5 * time.Second,
		Registerer:     prometheus.NewRegistry(),
		ConfigureClient: func(_ string, c *fasthttp.HostClient) {
			c.MaxIdleConnDuration = 100 * time.Millisecond
		},
	}
}

func newPicker(t *testing.T, cfg Config) *Picker {
	t.Helper()
	p := New(cfg)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func upstreamStatus(p *Picker, server string) (UpstreamStatus, bool) {
	for _, u := range p.Status().Upstreams {
		if u.Server == server {
			return u, true
		}
	}
	return UpstreamStatus{}, false
}

// do sends one GET through the picker's LBClient.
func do(p *Picker) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://upstream/")
	return p.LBClient().Do(req, resp)
}

// hold returns a handler that blocks until release is closed (closed at cleanup at the latest), signalling
// started when a request arrives.
func hold(t *testing.T, body string) (h fasthttp.RequestHandler, started <-chan struct{}, release func()) {
	rel := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release)
	st := make(chan struct{}, 16)
	h = func(c *fasthttp.RequestCtx) {
		if string(c.Path()) == "/hold" {
			st <- struct{}{}
			<-rel
		}
		c.SetBodyString(body)
	}
	return h, st, release
}

// recv waits for ch for at most 10 s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func allSampled(p *Picker) bool {
	for _, u := range p.Status().Upstreams {
		if !u.Sampled && u.Healthy {
			return false
		}
	}
	return true
}

// get sends GET path through app's handler and returns status and body.
func get(t *testing.T, app *fiber.App, path string) (int, string) {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest(fiber.MethodGet, path, nil), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestNewPanicsNamingTheField(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
	}{
		{Config{}, "Config.Servers"},
		{Config{Servers: []string{"ftp://127.0.0.1:1"}}, "Config.Servers"},
		{Config{Servers: []string{"http://127.0.0.1:1/path"}}, "Config.Servers"},
		{Config{Servers: []string{"http://:80"}}, "Config.Servers"},
		{Config{Servers: []string{"http://[::1"}}, "Config.Servers"},
		{Config{Servers: []string{"127.0.0.1:1", "127.0.0.1:1"}}, "Config.Servers"},
		{Config{Servers: []string{"127.0.0.1:1"}, Mode: Mode(7)}, "Config.Mode"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: -time.Second}, "Config.HealthInterval"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: time.Second, HealthTimeout: time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthTimeout: 2 * time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, DrainTimeout: -1}, "Config.DrainTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Timeout: -1}, "Config.Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "upstreampick: "+tt.field) {
					t.Fatalf("panic %v, want a message naming %s", r, tt.field)
				}
			}()
			p := New(tt.cfg)
			p.Close()
		})
	}
}

func TestConfigDefault(t *testing.T) {
	cfg := configDefault(Config{Servers: []string{"127.0.0.1:1"}, Retries: -1})
	switch {
	case cfg.Mode != ModeLatency, cfg.HealthInterval != time.Second, cfg.HealthTimeout != 500*time.Millisecond,
		cfg.DrainTimeout != 30*time.Second, cfg.Timeout != time.Second, cfg.Retries != 0,
		cfg.LookupHost == nil, cfg.Registerer != prometheus.DefaultRegisterer, cfg.Name != "default":
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	if cfg := configDefault(Config{Servers: []string{"127.0.0.1:1"}}); cfg.Retries != 2 {
		t.Fatalf("Retries default %d, want 2", cfg.Retries)
	}
}

func TestProxyBalancerSpreadsAndMeasures(t *testing.T) {
	a, b := startSite(t, "a", nil), startSite(t, "b", nil)
	p := newPicker(t, testConfig("http://"+a.addr, b.addr))
	app := fiber.New()
	app.Use(proxy.Balancer(proxy.Config{Client: p.LBClient()}))

	waitFor(t, "both upstreams measured", func() bool { return allSampled(p) })
	seen := map[string]int{}
	for range 200 {
		code, body := get(t, app, "/x")
		if code != fiber.StatusOK {
			t.Fatalf("status %d body %q", code, body)
		}
		seen[body]++
	}
	// Both loopback upstreams are one tier: both get traffic (each at least 40 of 200; p < 1e-15 to fail).
	if seen["a"] < 40 || seen["b"] < 40 {
		t.Fatalf("spread %v, want both well used", seen)
	}
	st := p.Status()
	if st.Mode != "latency" || len(st.Upstreams) != 2 {
		t.Fatalf("status %+v", st)
	}
	var picks uint64
	for _, u := range st.Upstreams {
		if u.Tier != 0 || !u.Healthy || !u.Active || u.RTT <= 0 || u.RTT > time.Second || u.Draining {
			t.Fatalf("upstream status %+v", u)
		}
		picks += u.Picks
	}
	if picks != 200 {
		t.Fatalf("picks %d, want 200", picks)
	}
}

func TestDeadUpstreamAttractsNoTraffic(t *testing.T) {
	a := startSite(t, "a", nil)
	dead := deadAddr(t)
	cfg := testConfig(a.addr, dead)
	cfg.HealthInterval = time.Hour // only proxied failures count here; the first round runs at once
	cfg.HealthTimeout = time.Second
	p := newPicker(t, cfg)
	app := fiber.New()
	app.Use(proxy.Balancer(proxy.Config{Client: p.LBClient()}))

	// The first round's dial to the dead upstream fails (one failure). Proxied dials add the second.
	waitFor(t, "first health round", func() bool { u, _ := upstreamStatus(p, a.addr); return u.Sampled })
	for i := range 100 {
		code, body := get(t, app, "/")
		if code != fiber.StatusOK || body != "a" {
			t.Fatalf("request %d: status %d body %q; connection failures must be retried elsewhere", i, code, body)
		}
	}
	u, _ := upstreamStatus(p, dead)
	if u.Healthy || u.Active {
		t.Fatalf("dead upstream %+v, want unhealthy and inactive", u)
	}
	// It failed fast and was tried at most twice (health dial + one proxied dial, or two proxied dials).
	if u.Picks > 2 {
		t.Fatalf("dead upstream picked %d times, want at most 2", u.Picks)
	}
}

func TestHealthMarksUnhealthyAfterTwoFailuresAndRestoresAfterOne(t *testing.T) {
	// Find a free port, then serve on it only later.
	addr := deadAddr(t)
	p := newPicker(t, testConfig(addr))
	waitFor(t, "two failed health dials", func() bool { u, _ := upstreamStatus(p, addr); return !u.Healthy })
	if u, _ := upstreamStatus(p, addr); u.Sampled || u.Tier != noTier {
		t.Fatalf("failed dials must not be samples: %+v", u)
	}

	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv := &fasthttp.Server{
		Handler:               func(c *fasthttp.RequestCtx) { c.SetBodyString("late") },
		MaxIdleWorkerDuration: 50 * time.Millisecond,
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown() }()
	waitFor(t, "one successful health dial", func() bool { u, _ := upstreamStatus(p, addr); return u.Healthy && u.Sampled })
}

func TestNoUpstreamFailsFast(t *testing.T) {
	d1, d2 := deadAddr(t), deadAddr(t)
	p := newPicker(t, testConfig(d1, d2))
	waitFor(t, "both upstreams unhealthy", func() bool {
		for _, u := range p.Status().Upstreams {
			if u.Healthy {
				return false
			}
		}
		return true
	})

	balanced := fiber.New()
	balanced.Use(proxy.Balancer(proxy.Config{Client: p.LBClient()}))
	own := fiber.New()
	own.Use(p.Handler())
	for name, app := range map[string]*fiber.App{"proxy.Balancer": balanced, "Handler": own} {
		start := time.Now()
		code, body := get(t, app, "/")
		if code != fiber.StatusServiceUnavailable || !strings.Contains(body, "no upstream available") {
			t.Fatalf("%s: status %d body %q, want 503 no upstream available", name, code, body)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%s: took %v, want an immediate answer", name, d)
		}
	}
	if err := p.BalancingClient().DoDeadline(&fasthttp.Request{}, &fasthttp.Response{}, time.Now().Add(time.Second)); !errors.Is(err, ErrNoUpstream) {
		t.Fatalf("DoDeadline error %v, want ErrNoUpstream", err)
	}
}

func TestHandlerErrors(t *testing.T) {
	slow := startSite(t, "slow", func(c *fasthttp.RequestCtx) {
		time.Sleep(300 * time.Millisecond)
		c.SetBodyString("slow")
	})
	cfg := testConfig(slow.addr)
	cfg.Timeout = 50 * time.Millisecond
	cfg.Next = func(c *fiber.Ctx) bool { return c.Path() == "/local" }
	p := newPicker(t, cfg)
	app := fiber.New()
	app.Use(p.Handler())
	app.Get("/local", func(c *fiber.Ctx) error { return c.SendString("local") })

	if code, body := get(t, app, "/local"); code != fiber.StatusOK || body != "local" {
		t.Fatalf("Next: status %d body %q", code, body)
	}
	if code, _ := get(t, app, "/"); code != fiber.StatusGatewayTimeout {
		t.Fatalf("slow upstream: status %d, want 504", code)
	}

	// An upstream that closes every connection without answering: 502.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	defer wg.Wait()
	defer ln.Close()
	p2 := newPicker(t, testConfig(ln.Addr().String()))
	app2 := fiber.New()
	app2.Use(p2.Handler())
	if code, _ := get(t, app2, "/"); code != fiber.StatusBadGateway {
		t.Fatalf("hanging-up upstream: status %d, want 502", code)
	}

	// The handler proxies like proxy.Balancer otherwise.
	ok := startSite(t, "ok", nil)
	p3 := newPicker(t, testConfig(ok.addr))
	app3 := fiber.New()
	app3.Use(p3.Handler())
	if code, body := get(t, app3, "/"); code != fiber.StatusOK || body != "ok" {
		t.Fatalf("status %d body %q", code, body)
	}
}

func TestSetServersDrains(t *testing.T) {
	h, started, release := hold(t, "a")
	a := startSite(t, "a", h)
	b := startSite(t, "b", nil)
	reg := prometheus.NewRegistry()
	cfg := testConfig(a.addr)
	cfg.Registerer = reg
	p := newPicker(t, cfg)
	app := fiber.New()
	app.Use(proxy.Balancer(proxy.Config{Client: p.LBClient()}))

	// A request in flight on a.
	held := make(chan string, 1)
	go func() {
		_, body := get(t, app, "/hold")
		held <- body
	}()
	recv(t, started, "request held on a")

	if err := p.SetServers([]string{b.addr}); err != nil {
		t.Fatal(err)
	}
	ua, ok := upstreamStatus(p, a.addr)
	if !ok || !ua.Draining || ua.Active || ua.InFlight != 1 {
		t.Fatalf("removed upstream %+v (present %v), want draining, inactive, 1 in flight", ua, ok)
	}
	for range 20 {
		if _, body := get(t, app, "/"); body != "b" {
			t.Fatalf("new request went to %q while a drains", body)
		}
	}
	// Still draining while its request is in flight, health rounds notwithstanding.
	time.Sleep(3 * cfg.HealthInterval)
	if _, ok := upstreamStatus(p, a.addr); !ok {
		t.Fatal("draining upstream forgotten while a request was in flight")
	}
	if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_picks_total"); n != 2 {
		t.Fatalf("picks series %d, want 2 while a drains", n)
	}

	// Re-adding aborts the drain; removing again restarts it.
	if err := p.SetServers([]string{b.addr, a.addr}); err != nil {
		t.Fatal(err)
	}
	if ua, _ := upstreamStatus(p, a.addr); ua.Draining {
		t.Fatalf("re-added upstream %+v, want not draining", ua)
	}
	// Both are on loopback, so a is back in b's tier once health rounds have measured it again.
	waitFor(t, "re-added upstream active", func() bool { ua, _ := upstreamStatus(p, a.addr); return ua.Active })
	if err := p.SetServers([]string{b.addr}); err != nil {
		t.Fatal(err)
	}

	release()
	if body := recv(t, held, "held request"); body != "a" {
		t.Fatalf("in-flight request got %q, want it to finish on a", body)
	}
	waitFor(t, "drained upstream forgotten", func() bool { _, ok := upstreamStatus(p, a.addr); return !ok })
	if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_picks_total"); n != 1 {
		t.Fatalf("picks series %d, want 1 after a is forgotten", n)
	}

	for _, bad := range [][]string{nil, {"ftp://x:1"}, {b.addr, b.addr}} {
		if err := p.SetServers(bad); err == nil || !strings.HasPrefix(err.Error(), "upstreampick: ") {
			t.Fatalf("SetServers(%q) error %v, want a clear error", bad, err)
		}
	}
	if st := p.Status(); len(st.Upstreams) != 1 || st.Upstreams[0].Server != b.addr {
		t.Fatalf("a rejected list must change nothing: %+v", st)
	}
}

func TestDrainTimeout(t *testing.T) {
	h, started, release := hold(t, "a")
	a := startSite(t, "a", h)
	b := startSite(t, "b", nil)
	cfg := testConfig(a.addr)
	cfg.DrainTimeout = 100 * time.Millisecond
	p := newPicker(t, cfg)
	done := make(chan error, 1)
	go func() {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://upstream/hold")
		done <- p.LBClient().Do(req, resp)
	}()
	recv(t, started, "request held on a")
	if err := p.SetServers([]string{b.addr}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "drain timeout", func() bool { _, ok := upstreamStatus(p, a.addr); return !ok })
	release()
	if err := recv(t, done, "held request"); err != nil {
		t.Fatalf("request on a forgotten upstream: %v (it must still finish)", err)
	}
}

func TestMetrics(t *testing.T) {
	a := startSite(t, "a", nil)
	reg := prometheus.NewRegistry()
	cfg := testConfig(a.addr)
	cfg.Registerer = reg
	p := newPicker(t, cfg)
	waitFor(t, "measured", func() bool { return allSampled(p) })
	if err := do(p); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"fiberguard_upstreampick_tier":        0,
		"fiberguard_upstreampick_healthy":     1,
		"fiberguard_upstreampick_draining":    0,
		"fiberguard_upstreampick_picks_total": 1,
	} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			m := mf.GetMetric()[0]
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 2 || labels["upstream"] != a.addr || labels["picker"] != "default" {
				t.Fatalf("%s labels %v", name, labels)
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if v != want {
				t.Fatalf("%s = %v, want %v", name, v, want)
			}
			found = true
		}
		if !found {
			t.Fatalf("%s missing", name)
		}
	}
	if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_rtt_seconds"); n != 1 {
		t.Fatalf("rtt series %d, want 1", n)
	}

	// A second Picker on the same registry neither panics nor breaks the first.
	p2 := New(cfg)
	p2.Close()
	if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 1 {
		t.Fatalf("tier series %d after a duplicate Picker, want 1", n)
	}
	// Close unregisters, so a new Picker can take over.
	p.Close()
	if n := testutil.CollectAndCount(reg); n != 0 {
		t.Fatalf("%d series after Close, want 0", n)
	}
	p3 := newPicker(t, cfg)
	if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 1 {
		t.Fatalf("tier series %d for a new Picker, want 1", n)
	}
	p3.Close()

	cfg.DisableMetrics = true
	p4 := newPicker(t, cfg)
	if p4.metrics != nil || testutil.CollectAndCount(reg) != 0 {
		t.Fatal("DisableMetrics registered metrics")
	}
}

func TestNameResolutionIsNotTimed(t *testing.T) {
	a := startSite(t, "a", nil)
	_, port, _ := net.SplitHostPort(a.addr)
	cfg := testConfig("http://upstream.test:" + port)
	cfg.HealthInterval = time.Second
	cfg.HealthTimeout = 500 * time.Millisecond
	var mu sync.Mutex
	var asked []string
	cfg.LookupHost = func(ctx context.Context, host string) ([]string, error) {
		mu.Lock()
		asked = append(asked, host)
		mu.Unlock()
		select {
		case <-time.After(200 * time.Millisecond): // a slow resolver
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []string{"127.0.0.1"}, nil
	}
	p := newPicker(t, cfg)
	waitFor(t, "measured", func() bool { return allSampled(p) })
	u := p.Status().Upstreams[0]
	if u.RTT >= 200*time.Millisecond || !u.Healthy {
		t.Fatalf("status %+v: the resolver's 200 ms must not be part of the connect time", u)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked[0] != "upstream.test" {
		t.Fatalf("resolver asked %q", asked)
	}
}

func TestResolutionFailureCounts(t *testing.T) {
	cfg := testConfig("http://upstream.test:80")
	cfg.LookupHost = func(context.Context, string) ([]string, error) { return nil, errors.New("no such host") }
	p := newPicker(t, cfg)
	waitFor(t, "unhealthy", func() bool { u, _ := upstreamStatus(p, "http://upstream.test:80"); return !u.Healthy })
}

func TestCloseIsIdempotentAndStopsHealth(t *testing.T) {
	a := startSite(t, "a", nil)
	p := New(testConfig(a.addr))
	waitFor(t, "measured", func() bool { return allSampled(p) })
	_ = p.Close()
	select {
	case <-p.done:
	default:
		t.Fatal("the health goroutine is still running after Close")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Requests still go to the last pickable set.
	if err := do(p); err != nil {
		t.Fatalf("request after Close: %v", err)
	}
}

func TestHTTPSUpstreamSchemeIsSet(t *testing.T) {
	// The request arrives over http; an https upstream must be spoken to over TLS, not refused as a redirect to
	// a different scheme.
	p := newPicker(t, testConfig("https://127.0.0.1:1"))
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://example.com/x")
	err := p.BalancingClient().DoDeadline(req, &fasthttp.Response{}, time.Now().Add(time.Second))
	if errors.Is(err, fasthttp.ErrHostClientRedirectToDifferentScheme) || string(req.URI().Scheme()) != "https" {
		t.Fatalf("err %v scheme %q", err, req.URI().Scheme())
	}
}
