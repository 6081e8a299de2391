package core

import (
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
		ConfigureClient: func(_ string, c *fasthttp.HostClient) {
			c.MaxIdleConnDuration = 100 * time.Millisecond
		},
	}
}

// newEngine creates an Engine over cfg, filled with testDefaults, that logs nothing.
func newEngine(cfg config) *Engine { return NewEngine(cfg.WithDefaults(testDefaults), quiet{}, nil) }

// quiet is a Logger that drops every line; tests that read the log pass a logBook.
type quiet struct{}

func (quiet) Warnf(string, ...any) {}

// bubble is memnet.Bubble.
func bubble(t *testing.T, f func(t *testing.T, n *memnet.Net)) {
	t.Helper()
	memnet.Bubble(t, f)
}

// picker creates an Engine over n, closed when the bubble ends.
func picker(n *memnet.Net, cfg config) *Engine { return pickerWith(n, cfg, quiet{}, nil) }

// pickerWith is picker with a logger and a noUpstream error of its own.
func pickerWith(n *memnet.Net, cfg config, log Logger, noUpstream error) *Engine {
	cfg.Dial = n.Dial
	p := NewEngine(cfg.WithDefaults(testDefaults), log, noUpstream)
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

func allUnhealthy(p *Engine) bool {
	for _, u := range p.Status().Upstreams {
		if u.Healthy {
			return false
		}
	}
	return true
}

// do sends one GET through the picker's LBClient.
func do(p *Engine) error {
	_, err := doPath(p, "/")
	return err
}

// doPath sends GET path through the picker's LBClient and returns the body.
func doPath(p *Engine, path string) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://upstream" + path)
	err := p.LBClient().Do(req, resp)
	return string(resp.Body()), err
}

// lbApp is a server handler sending every request through the picker's LBClient, as proxy.Balancer does; an
// error is answered 502 with its text.
func lbApp(p *Engine) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		if err := p.LBClient().Do(&c.Request, &c.Response); err != nil {
			c.Response.Reset()
			c.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}
}
