package upstreampick

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Upstream addresses of the in-memory network.
const (
	addrA = "10.0.0.1:8080"
	addrB = "10.0.0.2:8080"
	// deadServer is an address of the in-memory network where nothing answers.
	deadServer = "10.0.0.9:80"
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

var (
	bubble     = memnet.Bubble
	eventually = memnet.Eventually
	refuse     = memnet.Refuse
)

// picker creates a Picker over n, closed when the bubble ends.
func picker(n *memnet.Net, cfg Config) *Picker {
	cfg.Dial = n.Dial
	p := NewPicker(cfg)
	n.Own(p)
	return p
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

// rejectingApp returns an app using the Handler of a Picker over cfg once its upstreams are unhealthy, so that
// it rejects every request.
func rejectingApp(t *testing.T, n *memnet.Net, cfg Config) *fiber.App {
	t.Helper()
	p := picker(n, cfg)
	eventually(t, "upstreams unhealthy", func() bool { return allUnhealthy(p) })
	app := fiber.New()
	app.Use(p.Handler())
	return app
}

// response is what app.Test returned, its body read.
type response struct {
	status int
	body   string
	header http.Header
}

// call sends GET path to app through app.Test. A failure is reported with t.Errorf, so that goroutines may
// call it too; its response has status 0.
func call(t *testing.T, app *fiber.App, path string) response {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest(fiber.MethodGet, path, nil), fiber.TestConfig{Timeout: 10 * time.Second})
	if err != nil {
		t.Errorf("GET %s: %v", path, err)
		return response{}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: reading the body: %v", path, err)
	}
	return response{status: resp.StatusCode, body: string(body), header: resp.Header}
}

// get is call returning the status and body.
func get(t *testing.T, app *fiber.App, path string) (int, string) {
	t.Helper()
	r := call(t, app, path)
	return r.status, r.body
}

// balancerApp returns an app proxying every request through proxy.Balancer with p's client, its ErrorHandler
// answering ErrNoUpstream with p.Reject as the README shows.
func balancerApp(p *Picker) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: func(c fiber.Ctx, err error) error {
		if errors.Is(err, ErrNoUpstream) {
			return p.Reject(c)
		}
		return fiber.DefaultErrorHandler(c, err)
	}})
	app.Use(proxy.Balancer(proxy.Config{Client: p.LBClient()}))
	return app
}
