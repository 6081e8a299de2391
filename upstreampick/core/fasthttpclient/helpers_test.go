package fasthttpclient

import (
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Upstream addresses of the in-memory network.
const (
	addrA = "10.0.0.1:8080"
	addrB = "10.0.0.2:8080"
)

// config is the Config of the client's tests, which have no framework.
type config = core.Config[any, any]

// testDefaults are what an adapter's ConfigDefault holds.
var testDefaults = core.Defaults[any, any](nil)

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

// engine is an Engine with its Client, as a Picker holds them.
type engine struct {
	*core.Engine
	*Client
}

// BalancingClient is Picker.BalancingClient.
func (p engine) BalancingClient() fasthttp.BalancingClient { return p.Client }

// newEngineWith creates an engine over cfg, filled with testDefaults.
func newEngineWith(cfg config, log core.Logger, noUpstream error) engine {
	cfg = cfg.WithDefaults(testDefaults)
	CheckConfigureClient(cfg.ConfigureClient)
	e := core.NewEngine(cfg, log, NewHostClient)
	return engine{e, New(e, noUpstream)}
}

// newEngine creates an engine over cfg, filled with testDefaults, that logs nothing.
func newEngine(cfg config) engine { return newEngineWith(cfg, quiet{}, nil) }

// quiet is a Logger that drops every line.
type quiet struct{}

func (quiet) Warnf(string, ...any) {}

// bubble is memnet.Bubble.
func bubble(t *testing.T, f func(t *testing.T, n *memnet.Net)) {
	t.Helper()
	memnet.Bubble(t, f)
}

// picker creates an engine over n, closed when the bubble ends.
func picker(n *memnet.Net, cfg config) engine { return pickerWith(n, cfg, quiet{}, nil) }

// pickerWith is picker with a logger and a noUpstream error of its own.
func pickerWith(n *memnet.Net, cfg config, log core.Logger, noUpstream error) engine {
	cfg.Dial = n.Dial
	p := newEngineWith(cfg, log, noUpstream)
	n.Own(p)
	return p
}

var (
	eventually = memnet.Eventually
	refuse     = memnet.Refuse
)

// hasStatus is what has a Status: an engine or a Picker.
type hasStatus interface{ Status() core.Status }

func upstreamStatus(p hasStatus, server string) (core.UpstreamStatus, bool) {
	for _, u := range p.Status().Upstreams {
		if u.Server == server {
			return u, true
		}
	}
	return core.UpstreamStatus{}, false
}

func allUnhealthy(p hasStatus) bool {
	for _, u := range p.Status().Upstreams {
		if u.Healthy {
			return false
		}
	}
	return true
}

func allSampled(p hasStatus) bool {
	for _, u := range p.Status().Upstreams {
		if !u.Sampled && u.Healthy {
			return false
		}
	}
	return true
}

// do sends one GET through the engine's LBClient.
func do(p engine) error {
	_, err := doPath(p, "/")
	return err
}

// doPath sends GET path through the engine's LBClient and returns the body.
func doPath(p engine, path string) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://upstream" + path)
	err := p.LBClient().Do(req, resp)
	return string(resp.Body()), err
}

// lbApp is a server handler sending every request through the engine's LBClient, as proxy.Balancer does; an
// error is answered 502 with its text.
func lbApp(p engine) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		if err := p.LBClient().Do(&c.Request, &c.Response); err != nil {
			c.Response.Reset()
			c.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}
}
