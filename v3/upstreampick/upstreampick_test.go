package upstreampick

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

func TestNoUpstreamFailsFast(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		d1, d2 := "10.0.0.8:80", "10.0.0.9:80" // nothing answers there
		p := picker(n, testConfig(d1, d2))
		eventually(t, "both upstreams unhealthy", func() bool { return allUnhealthy(p) })

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
			if d := time.Since(start); d != 0 {
				t.Fatalf("%s: took %v, want an immediate answer", name, d)
			}
		}
		if err := p.BalancingClient().DoDeadline(&fasthttp.Request{}, &fasthttp.Response{}, time.Now().Add(time.Second)); !errors.Is(err, ErrNoUpstream) {
			t.Fatalf("DoDeadline error %v, want ErrNoUpstream", err)
		}
		if st := p.Status(); st.Rejected != 3 || st.Admitted != 0 {
			t.Fatalf("admitted %d rejected %d, want 0 and 3 (Handler, LBClient, BalancingClient)", st.Admitted, st.Rejected)
		}
	})
}

// TestProxyBalancerProxies: proxy.Balancer with the picker's LBClient forwards the request, path and query
// included, to both upstreams of the nearest tier and answers with their responses.
func TestProxyBalancerProxies(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		for _, u := range []struct {
			addr, name string
			rtt        time.Duration
		}{{addrA, "a", time.Millisecond}, {addrB, "b", 2 * time.Millisecond}} {
			n.Serve(u.addr, u.rtt, func(c *fasthttp.RequestCtx) { c.SetBodyString(u.name + " " + string(c.RequestURI())) })
		}
		p := picker(n, testConfig(addrA, addrB))
		eventually(t, "both upstreams measured", func() bool { return allSampled(p) })
		app := balancerApp(p)
		seen := map[string]int{}
		for range 100 {
			code, body := get(t, app, "/x?y=1")
			if code != fiber.StatusOK {
				t.Fatalf("status %d body %q", code, body)
			}
			seen[body]++
		}
		// 1 and 2 ms are one tier: both get traffic (each at least 20 of 100; p < 1e-9 to fail).
		if len(seen) != 2 || seen["a /x?y=1"] < 20 || seen["b /x?y=1"] < 20 {
			t.Fatalf("answers %v, want both upstreams' with the path and query", seen)
		}
		if st := p.Status(); st.Admitted != 100 || st.Rejected != 0 {
			t.Fatalf("admitted %d rejected %d, want 100 and 0", st.Admitted, st.Rejected)
		}
	})
}

func TestRejectionHeaders(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		instance   string
		wantRetry  string // "" means no header
		wantBy     string
	}{
		{"zero is the default 1s", 0, "", "1", "upstreampick/default"},
		{"1ns rounds up to 1", time.Nanosecond, "", "1", "upstreampick/default"},
		{"1.5s rounds up to 2", 1500 * time.Millisecond, "", "2", "upstreampick/default"},
		{"negative sends none", -time.Second, "", "", "upstreampick/default"},
		{"custom name", 0, "api", "1", "upstreampick/api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, n *memnet.Net) {
				cfg := testConfig(deadServer)
				cfg.RetryAfter, cfg.Name = tt.retryAfter, tt.instance
				resp := call(t, rejectingApp(t, n, cfg), "/")
				if resp.status != fiber.StatusServiceUnavailable || resp.body != "upstreampick: no upstream available\n" {
					t.Fatalf("status %d body %q, want the default OnReject", resp.status, resp.body)
				}
				retry := resp.header.Values(fiber.HeaderRetryAfter)
				if tt.wantRetry == "" && len(retry) != 0 || tt.wantRetry != "" && (len(retry) != 1 || retry[0] != tt.wantRetry) {
					t.Fatalf("Retry-After %q, want %q", retry, tt.wantRetry)
				}
				if got := resp.header.Get("Fiberguard-Rejected-By"); got != tt.wantBy {
					t.Fatalf("Fiberguard-Rejected-By %q, want %q", got, tt.wantBy)
				}
			})
		})
	}
}

func TestOnRejectSeesBothHeaders(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		cfg := testConfig(deadServer)
		cfg.Name, cfg.RetryAfter = "edge", 3*time.Second
		var seenRetry, seenBy string
		cfg.OnReject = func(c fiber.Ctx) error {
			seenRetry, seenBy = c.GetRespHeader(fiber.HeaderRetryAfter), c.GetRespHeader("Fiberguard-Rejected-By")
			return c.Status(fiber.StatusTooManyRequests).SendString("custom")
		}
		resp := call(t, rejectingApp(t, n, cfg), "/")
		if resp.status != fiber.StatusTooManyRequests || resp.body != "custom" {
			t.Fatalf("status %d body %q, want OnReject's answer", resp.status, resp.body)
		}
		if seenRetry != "3" || seenBy != "upstreampick/edge" {
			t.Fatalf("OnReject saw Retry-After %q, Fiberguard-Rejected-By %q; want 3 and upstreampick/edge", seenRetry, seenBy)
		}
		if got := resp.header.Get(fiber.HeaderRetryAfter); got != "3" {
			t.Fatalf("response Retry-After %q, want 3", got)
		}
	})
}

func TestHandlerErrors(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		const slow, hangUp, ok = "10.0.0.5:80", "10.0.0.6:80", "10.0.0.7:80"
		n.Serve(slow, time.Millisecond, func(c *fasthttp.RequestCtx) {
			time.Sleep(300 * time.Millisecond)
			c.SetBodyString("slow")
		})
		n.Serve(hangUp, time.Millisecond, nil)
		n.Set(hangUp, memnet.HangUp) // closes every connection without answering
		n.Serve(ok, time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("ok") })

		cfg := testConfig(slow)
		cfg.Timeout = 50 * time.Millisecond
		cfg.Next = func(c fiber.Ctx) bool { return c.Path() == "/local" }
		p := picker(n, cfg)
		app := fiber.New()
		app.Use(p.Handler())
		app.Get("/local", func(c fiber.Ctx) error { return c.SendString("local") })
		if code, body := get(t, app, "/local"); code != fiber.StatusOK || body != "local" {
			t.Fatalf("Next: status %d body %q", code, body)
		}
		if code, _ := get(t, app, "/"); code != fiber.StatusGatewayTimeout {
			t.Fatalf("slow upstream: status %d, want 504", code)
		}

		app2 := fiber.New()
		app2.Use(picker(n, testConfig(hangUp)).Handler())
		if code, _ := get(t, app2, "/"); code != fiber.StatusBadGateway {
			t.Fatalf("hanging-up upstream: status %d, want 502", code)
		}

		// The handler proxies like proxy.Balancer otherwise.
		app3 := fiber.New()
		app3.Use(picker(n, testConfig(ok)).Handler())
		if code, body := get(t, app3, "/"); code != fiber.StatusOK || body != "ok" {
			t.Fatalf("status %d body %q", code, body)
		}
	})
}

func TestHandlerCallsAreEquivalent(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		p := picker(n, testConfig(addrA))
		h1, h2 := p.Handler(), p.Handler()
		for _, h := range []fiber.Handler{h1, h2} {
			app := fiber.New()
			app.Use(h)
			if code, body := get(t, app, "/"); code != fiber.StatusOK || body != addrA {
				t.Fatalf("status %d body %q", code, body)
			}
		}
		if st := p.Status(); st.Admitted != 2 || st.Upstreams[0].Picks != 2 {
			t.Fatalf("status %+v, want both handlers counted on the one Picker", st)
		}
	})
}

// TestContextStopsTheHealthGoroutine cancels Config.Context: the metrics are unregistered and no goroutine is
// left, for New (which returns no handle) and NewPicker alike.
func TestContextStopsTheHealthGoroutine(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		before := goleak.IgnoreCurrent()

		ctx, cancel := context.WithCancel(context.Background())
		reg := prometheus.NewRegistry()
		cfg := testConfig(addrA)
		cfg.Dial, cfg.Context, cfg.Registerer = n.Dial, ctx, reg
		app := fiber.New()
		app.Use(New(cfg))
		cfg.Name = "handle"
		p := NewPicker(cfg)
		time.Sleep(3*cfg.HealthInterval + cfg.HealthInterval/2) // between rounds
		synctest.Wait()
		if code, body := get(t, app, "/"); code != fiber.StatusOK || body != addrA {
			t.Fatalf("status %d body %q", code, body)
		}
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 2 {
			t.Fatalf("tier series %d, want 2 (two instances)", n)
		}

		cancel()
		synctest.Wait()
		if n := testutil.CollectAndCount(reg); n != 0 {
			t.Fatalf("%d series after Context is done, want 0", n)
		}
		// The health goroutines ended; idle connections were closed, so the cleaners end too.
		goleak.VerifyNone(t, before)
		// Requests are still answered.
		if code, _ := get(t, app, "/"); code != fiber.StatusOK {
			t.Fatalf("request after Context is done: status %d", code)
		}
		_ = p.Close() // idempotent after the Context's close
	})
}

func TestCloseConcurrentWithRequests(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		n.Serve(addrB, time.Millisecond, nil)
		p := picker(n, testConfig(addrA, addrB))
		app := fiber.New()
		app.Use(p.Handler())

		var wg sync.WaitGroup
		bad := make(chan string, 8*50)
		for range 8 {
			wg.Go(func() {
				for range 50 {
					if code, body := get(t, app, "/"); code != fiber.StatusOK || (body != addrA && body != addrB) {
						bad <- body
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		for range 3 {
			wg.Go(func() {
				time.Sleep(20 * time.Millisecond)
				if err := p.Close(); err != nil {
					bad <- "Close: " + err.Error()
				}
			})
		}
		wg.Wait()
		close(bad)
		for b := range bad {
			t.Errorf("during Close: %q", b)
		}
		if st := p.Status(); st.Admitted != 8*50 {
			t.Fatalf("admitted %d, want %d", st.Admitted, 8*50)
		}
	})
}
