package fasthttpclient

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/valyala/fasthttp"
)

// fakeCtx is a framework's request context over a fasthttp one; Next counts its calls.
type fakeCtx struct {
	fasthttp.RequestCtx
	nexts int
}

func (c *fakeCtx) Next() error                  { c.nexts++; return nil }
func (c *fakeCtx) Request() *fasthttp.Request   { return &c.RequestCtx.Request }
func (c *fakeCtx) Response() *fasthttp.Response { return &c.RequestCtx.Response }

type fakeHandler func(*fakeCtx) error

// The framework's errors, told apart by identity.
var (
	errFakeNoUpstream = errors.New("no upstream (503)")
	errFakeTimeout    = errors.New("gateway timeout (504)")
	errFakeBad        = errors.New("bad gateway (502)")
	fakeFramework     = Framework{NoUpstream: errFakeNoUpstream, GatewayTimeout: errFakeTimeout, BadGateway: errFakeBad,
		Log: quiet{}}
)

// fakeDefaults is an adapter's ConfigDefault: its OnReject answers 503.
func fakeDefaults() core.Config[*fakeCtx, fakeHandler] {
	return core.Defaults[*fakeCtx](fakeHandler(func(c *fakeCtx) error {
		c.SetStatusCode(fasthttp.StatusServiceUnavailable)
		c.SetBodyString("upstreampick: no upstream available\n")
		return nil
	}))
}

// fakeConfig is testConfig for a Picker over n.
func fakeConfig(n *memnet.Net, servers ...string) core.Config[*fakeCtx, fakeHandler] {
	c := testConfig(servers...)
	return core.Config[*fakeCtx, fakeHandler]{Servers: c.Servers, HealthInterval: c.HealthInterval,
		HealthTimeout: c.HealthTimeout, Timeout: c.Timeout, Registerer: c.Registerer,
		ConfigureClient: c.ConfigureClient, Dial: n.Dial}
}

// newFakePicker creates a Picker over cfg, closed when the bubble ends.
func newFakePicker(n *memnet.Net, cfg core.Config[*fakeCtx, fakeHandler]) *Picker[*fakeCtx, fakeHandler] {
	p := NewPicker(fakeDefaults(), fakeFramework, cfg)
	n.Own(p)
	return p
}

// serve runs h on a GET path.
func serve(h fakeHandler, path string) (*fakeCtx, error) {
	c := &fakeCtx{}
	c.RequestCtx.Request.SetRequestURI("http://gateway" + path)
	return c, h(c)
}

// TestPickerHandler: Next skips to the next handler; a proxied request holds the upstream's answer; a slow
// upstream is the framework's 504 error, a failing one its 502; no upstream runs OnReject after both headers.
func TestPickerHandler(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		const slow, hangUp, ok = "10.0.0.5:80", "10.0.0.6:80", "10.0.0.7:80"
		n.Serve(slow, time.Millisecond, func(c *fasthttp.RequestCtx) {
			time.Sleep(300 * time.Millisecond)
			c.SetBodyString("slow")
		})
		n.Serve(hangUp, time.Millisecond, nil)
		n.Set(hangUp, memnet.HangUp)
		n.Serve(ok, time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("ok " + string(c.RequestURI())) })

		cfg := fakeConfig(n, ok)
		cfg.Next = func(c *fakeCtx) bool { return string(c.Path()) == "/local" }
		p := newFakePicker(n, cfg)
		if c, err := serve(p.Handler(), "/local"); err != nil || c.nexts != 1 || len(c.Response().Body()) != 0 {
			t.Fatalf("Next: err %v, nexts %d, body %q; want Next called and nothing proxied", err, c.nexts, c.Response().Body())
		}
		if c, err := serve(p.Handler(), "/x?y=1"); err != nil || c.nexts != 0 || string(c.Response().Body()) != "ok /x?y=1" {
			t.Fatalf("proxied: err %v, nexts %d, body %q", err, c.nexts, c.Response().Body())
		}

		cfg = fakeConfig(n, slow)
		cfg.Timeout = 50 * time.Millisecond
		if _, err := serve(newFakePicker(n, cfg).Handler(), "/"); !errors.Is(err, errFakeTimeout) {
			t.Fatalf("slow upstream: %v, want the framework's 504", err)
		}
		if _, err := serve(newFakePicker(n, fakeConfig(n, hangUp)).Handler(), "/"); !errors.Is(err, errFakeBad) {
			t.Fatalf("hanging-up upstream: %v, want the framework's 502", err)
		}

		cfg = fakeConfig(n, "10.0.0.9:80")
		cfg.Name, cfg.RetryAfter = "edge", 3*time.Second
		var saw string
		cfg.OnReject = func(c *fakeCtx) error {
			h := &c.Response().Header
			saw = string(h.Peek("Retry-After")) + " " + string(h.Peek("Fiberguard-Rejected-By"))
			return errors.New("rejected")
		}
		p = newFakePicker(n, cfg)
		eventually(t, "upstream unhealthy", func() bool { return allUnhealthy(p.engine) })
		if _, err := serve(p.Handler(), "/"); err == nil || err.Error() != "rejected" || saw != "3 upstreampick/edge" {
			t.Fatalf("no upstream: err %v, OnReject saw %q; want OnReject's error after both headers", err, saw)
		}
		// LBClient returns the framework's error; Reject then answers as Handler does, counting the request once.
		c := &fakeCtx{}
		if err := p.LBClient().Do(c.Request(), c.Response()); !errors.Is(err, errFakeNoUpstream) {
			t.Fatalf("LBClient: %v, want the framework's ErrNoUpstream", err)
		}
		saw = ""
		if err := p.Reject(c); err == nil || saw != "3 upstreampick/edge" {
			t.Fatalf("Reject: err %v, OnReject saw %q", err, saw)
		}
		if st := p.Status(); st.Rejected != 2 || st.Admitted != 0 {
			t.Fatalf("rejected %d admitted %d, want 2 and 0", st.Rejected, st.Admitted)
		}
	})
}

// TestNewPickerDefaults: NewPicker fills the zero fields from the defaults it is given, at call time; with no
// config it uses the defaults as they are.
func TestNewPickerDefaults(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		cfg := fakeConfig(n, "10.0.0.9:80")
		cfg.HealthInterval, cfg.HealthTimeout, cfg.Retries = 0, 0, -1
		p := newFakePicker(n, cfg)
		got := p.cfg
		switch {
		case got.Mode != core.ModeLatency, got.HealthInterval != time.Second, got.HealthTimeout != 500*time.Millisecond,
			got.DrainTimeout != 30*time.Second, got.Timeout != 5*time.Second, got.Retries != 0,
			got.OnReject == nil, got.RetryAfter != time.Second, got.Name != "default",
			// nil means the default, resolved where it is used.
			got.LookupHost != nil, got.Context != nil, got.Discover != nil, got.Resolver != nil:
			t.Fatalf("defaults not applied: %+v", got)
		}
		if c, _ := serve(got.OnReject, "/"); c.Response().StatusCode() != fasthttp.StatusServiceUnavailable {
			t.Fatalf("OnReject is not the default's: status %d", c.Response().StatusCode())
		}

		def := fakeDefaults()
		def.Servers, def.Dial, def.DisableMetrics, def.Retries = []string{"10.0.0.9:80"}, n.Dial, true, 5
		q := NewPicker(def, fakeFramework)
		n.Own(q)
		if q.cfg.Retries != 5 || q.cfg.HealthTimeout != 500*time.Millisecond || len(q.Status().Upstreams) != 1 {
			t.Fatalf("NewPicker() = %+v, want the defaults with HealthTimeout filled", q.cfg)
		}
	})
}

func TestNewPickerPanicsOnNilOnReject(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "upstreampick: Config.OnReject") {
			t.Fatalf("panic %q, want one naming Config.OnReject", msg)
		}
	}()
	def := core.Defaults[*fakeCtx, fakeHandler](nil)
	NewPicker(def, fakeFramework, core.Config[*fakeCtx, fakeHandler]{Servers: []string{"127.0.0.1:1"}, Dial: refuse})
	t.Fatal("NewPicker did not panic")
}

// TestPickerRejectAllocatesNothing: the answer when nothing is pickable (the default OnReject with both
// headers) allocates nothing.
func TestPickerRejectAllocatesNothing(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		p := newFakePicker(n, fakeConfig(n, "10.0.0.9:80"))
		eventually(t, "upstream unhealthy", func() bool { return allUnhealthy(p.engine) })
		h := p.Handler()
		c := &fakeCtx{}
		c.RequestCtx.Request.SetRequestURI("http://gateway/")
		if allocs := testing.AllocsPerRun(100, func() {
			_ = h(c)
			c.RequestCtx.Response.Reset()
		}); allocs != 0 {
			t.Fatalf("%v allocations per rejected request, want 0", allocs)
		}
	})
}

// TestNewPickerPanicsOnAnotherClientsConfigureClient: Config.ConfigureClient is typed any (Config names no
// client package), so a func for another client layer is caught when the Picker is created.
func TestNewPickerPanicsOnAnotherClientsConfigureClient(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "upstreampick: Config.ConfigureClient must be a func(server string, c *fasthttp.HostClient)") {
			t.Fatalf("panic %q, want one naming Config.ConfigureClient", msg)
		}
	}()
	NewPicker(fakeDefaults(), fakeFramework, core.Config[*fakeCtx, fakeHandler]{Servers: []string{"127.0.0.1:1"},
		Dial: refuse, DisableMetrics: true, ConfigureClient: func(*fasthttp.HostClient) {}})
	t.Fatal("NewPicker did not panic")
}
