package core

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Upstream addresses of the in-memory network.
const (
	addrA = "10.0.0.1:8080"
	addrB = "10.0.0.2:8080"
)

// config is the Config of the engine's tests, which have no framework.
type config = Config[any, any]

// testDefaults are what an adapter's ConfigDefault holds.
var testDefaults = Defaults[any, any](nil)

// testConfig is a fast-cycling config with metrics on a private registry.
func testConfig(servers ...string) config {
	return config{
		Servers:        servers,
		HealthInterval: 50 * time.Millisecond,
		HealthTimeout:  25 * time.Millisecond,
		Timeout:        5 * time.Second,
		Registerer:     prometheus.NewRegistry(),
	}
}

// newEngine creates an Engine over cfg, filled with testDefaults, that logs nothing.
func newEngine(cfg config) *Engine {
	return NewEngine(cfg.WithDefaults(testDefaults), quiet{}, newTestHostClient)
}

// quiet is a Logger that drops every line; tests that read the log pass a logBook.
type quiet struct{}

func (quiet) Warnf(string, ...any) {}

// bubble is memnet.Bubble.
func bubble(t *testing.T, f func(t *testing.T, n *memnet.Net)) {
	t.Helper()
	memnet.Bubble(t, f)
}

// picker creates an Engine over n, closed when the bubble ends.
func picker(n *memnet.Net, cfg config) *Engine { return pickerWith(n, cfg, quiet{}) }

// pickerWith is picker with a logger of its own.
func pickerWith(n *memnet.Net, cfg config, log Logger) *Engine {
	cfg.Dial = n.Dial
	p := NewEngine(cfg.WithDefaults(testDefaults), log, newTestHostClient)
	n.Own(p)
	return p
}

var (
	eventually = memnet.Eventually
	refuse     = memnet.Refuse
)

func upstreamStatus(p *Engine, server string) (UpstreamStatus, bool) {
	for _, u := range p.Status().Upstreams {
		if u.Server == server {
			return u, true
		}
	}
	return UpstreamStatus{}, false
}

func allSampled(p *Engine) bool {
	for _, u := range p.Status().Upstreams {
		if !u.Sampled && u.Healthy {
			return false
		}
	}
	return true
}

// The engine's tests send requests through a client layer of their own, built on the Engine's client API as
// fasthttpclient.Client is (package core cannot import it, and its tests cover it): a HostClient per upstream
// whose dials go through Engine.Dial and report to the upstream's health, and requests that go to another
// upstream when the connection could not be made.

// errNoUpstream is what the test client returns when nothing is pickable.
var errNoUpstream = errors.New("upstreampick: no upstream available")

// testDialError marks a failed dial: nothing was sent, so the request may go elsewhere.
type testDialError struct{ error }

func (e testDialError) Unwrap() error { return e.error }

// newTestHostClient is the NewEngine newClient of the tests.
func newTestHostClient(e *Engine, u *Upstream) UpstreamClient {
	return &fasthttp.HostClient{
		Addr:                u.Addr(),
		IsTLS:               u.TLS(),
		MaxIdleConnDuration: 100 * time.Millisecond,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			if timeout <= 0 {
				timeout = fasthttp.DefaultDialTimeout
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			conn, err := e.Dial(ctx, addr)
			if err != nil {
				e.Failed(u)
				return nil, testDialError{err}
			}
			e.Connected(u)
			return conn, nil
		},
	}
}

// send sends req to u and reports the outcome, as a client layer does.
func send(p *Engine, u *Upstream, req *fasthttp.Request, resp *fasthttp.Response) error {
	u.Begin()
	defer u.End()
	err := u.Client().(*fasthttp.HostClient).DoDeadline(req, resp, time.Now().Add(p.Timeout()))
	switch {
	case err == nil:
		p.Connected(u)
	case errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, syscall.ECONNRESET):
		p.Failed(u)
	}
	return err
}

// doRequest sends req to a picked upstream, and to others while the connection cannot be made.
func doRequest(p *Engine, req *fasthttp.Request, resp *fasthttp.Response) error {
	u := p.PickUpstream()
	if u == nil {
		p.Reject()
		return errNoUpstream
	}
	p.Admit()
	tried := []*Upstream{u}
	for {
		err := send(p, u, req, resp)
		var de testDialError
		if !errors.As(err, &de) || len(tried) > p.Retries() {
			return err
		}
		if u = p.PickOther(tried); u == nil {
			return err
		}
		tried = append(tried, u)
	}
}

// do sends one GET through the test client.
func do(p *Engine) error {
	_, err := doPath(p, "/")
	return err
}

// doPath sends GET path through the test client and returns the body.
func doPath(p *Engine, path string) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://upstream" + path)
	err := doRequest(p, req, resp)
	return string(resp.Body()), err
}

// lbApp is a server handler sending every request through the test client, as proxy.Balancer does with an
// LBClient; an error is answered 502 with its text.
func lbApp(p *Engine) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		if err := doRequest(p, &c.Request, &c.Response); err != nil {
			c.Response.Reset()
			c.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}
}
