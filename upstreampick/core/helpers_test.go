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

// testDefaults are what an adapter's ConfigDefault holds.
var testDefaults = Config{
	Mode:           ModeLatency,
	HealthInterval: time.Second,
	DrainTimeout:   30 * time.Second,
	Timeout:        fasthttp.DefaultLBClientTimeout,
	Retries:        2,
	RetryAfter:     time.Second,
	Name:           "default",
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

// newPicker creates a Picker over cfg, filled with testDefaults.
func newPicker(cfg Config) *Picker { return New(cfg.Fill(testDefaults)) }

// bubble is memnet.Bubble.
func bubble(t *testing.T, f func(t *testing.T, n *memnet.Net)) {
	t.Helper()
	memnet.Bubble(t, f)
}

// picker creates a Picker over n, closed when the bubble ends.
func picker(n *memnet.Net, cfg Config) *Picker {
	cfg.Dial = n.Dial
	p := newPicker(cfg)
	n.Own(p)
	return p
}

var (
	eventually = memnet.Eventually
	refuse     = memnet.Refuse
)

func upstreamStatus(p *Picker, server string) (UpstreamStatus, bool) {
	for _, u := range p.Status().Upstreams {
		if u.Server == server {
			return u, true
		}
	}
	return UpstreamStatus{}, false
}

func allSampled(p *Picker) bool {
	for _, u := range p.Status().Upstreams {
		if !u.Sampled && u.Healthy {
			return false
		}
	}
	return true
}

func allUnhealthy(p *Picker) bool {
	for _, u := range p.Status().Upstreams {
		if u.Healthy {
			return false
		}
	}
	return true
}

// do sends one GET through the picker's LBClient.
func do(p *Picker) error {
	_, err := doPath(p, "/")
	return err
}

// doPath sends GET path through the picker's LBClient and returns the body.
func doPath(p *Picker, path string) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://upstream" + path)
	err := p.LBClient().Do(req, resp)
	return string(resp.Body()), err
}

// lbApp is a server handler sending every request through the picker's LBClient, as proxy.Balancer does; an
// error is answered 502 with its text.
func lbApp(p *Picker) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		if err := p.LBClient().Do(&c.Request, &c.Response); err != nil {
			c.Response.Reset()
			c.Error(err.Error(), fasthttp.StatusBadGateway)
		}
	}
}
