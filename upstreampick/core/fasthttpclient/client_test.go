package fasthttpclient

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/valyala/fasthttp"
)

func TestHTTPSUpstreamSchemeIsSet(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		// The request arrives over http; an https upstream must be spoken to over TLS, not refused as a
		// redirect to a different scheme.
		p := picker(n, testConfig("https://10.0.0.9:1"))
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI("http://example.com/x")
		err := p.BalancingClient().DoDeadline(req, &fasthttp.Response{}, time.Now().Add(time.Second))
		if errors.Is(err, fasthttp.ErrHostClientRedirectToDifferentScheme) || string(req.URI().Scheme()) != "https" {
			t.Fatalf("err %v scheme %q", err, req.URI().Scheme())
		}
	})
}

func TestDeadUpstreamAttractsNoTraffic(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		const dead = "10.0.0.9:80" // nothing answers there
		n.Serve(addrA, time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("a") })
		cfg := testConfig(addrA, dead)
		cfg.HealthInterval = time.Hour // only proxied failures count here; the first round runs at once
		cfg.HealthTimeout = time.Second
		p := picker(n, cfg)
		app := lbApp(p)

		// The first round's dial to the dead upstream fails (one failure). Proxied dials add the second.
		eventually(t, "first health round", func() bool { u, _ := upstreamStatus(p, addrA); return u.Sampled })
		for i := range 100 {
			code, body := memnet.Get(app, "/")
			if code != 200 || body != "a" {
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
	})
}

// TestRequestsDialThroughConfigDial: requests use Config.Dial too, with the configured host, while
// ConfigureClient's own Dial takes precedence for requests.
func TestRequestsDialThroughConfigDial(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		p := picker(n, testConfig(addrA))
		eventually(t, "measured", func() bool { return allSampled(p) })
		health := n.Dials(addrA)
		if err := do(p); err != nil {
			t.Fatal(err)
		}
		if got := n.Dials(addrA) - health; got != 1 {
			t.Fatalf("%d request dials through Config.Dial, want 1", got)
		}

		var own int
		cfg := testConfig(addrB)
		n.Serve(addrB, time.Millisecond, nil)
		cfg.ConfigureClient = func(_ string, c *fasthttp.HostClient) {
			c.Dial = func(addr string) (net.Conn, error) {
				own++
				return n.Dial(context.Background(), addr)
			}
		}
		p2 := picker(n, cfg)
		if err := do(p2); err != nil {
			t.Fatal(err)
		}
		if own != 1 {
			t.Fatalf("ConfigureClient's Dial used %d times, want 1", own)
		}
	})
}
