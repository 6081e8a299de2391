package upstreampick

import (
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

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
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://upstream/")
	return p.LBClient().Do(req, resp)
}

// call sends GET path to h (an app's handler) on a RequestCtx of its own, as a server would, and returns a
// copy of the response.
func call(h fasthttp.RequestHandler, path string) *fasthttp.Response {
	var c fasthttp.RequestCtx
	c.Request.Header.SetMethod(fasthttp.MethodGet)
	c.Request.SetRequestURI(path)
	c.Request.Header.SetHost("gateway")
	h(&c)
	resp := &fasthttp.Response{}
	c.Response.CopyTo(resp)
	return resp
}

// get is call returning the status and body.
func get(h fasthttp.RequestHandler, path string) (int, string) {
	resp := call(h, path)
	return resp.StatusCode(), string(resp.Body())
}

// fiberApp returns the handler of an app proxying every request through proxy.Balancer with p's client.
func fiberApp(p *Picker) fasthttp.RequestHandler {
	app := fiber.New()
	app.Use(proxy.Balancer(proxy.Config{Client: p.LBClient()}))
	return app.Handler()
}

// hold returns a handler that blocks on /hold until release is called (when the bubble ends at the latest),
// signalling started when such a request arrives.
func hold(n *memNet, body string) (h fasthttp.RequestHandler, started <-chan struct{}, release func()) {
	rel := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	n.atShutdown(release)
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
