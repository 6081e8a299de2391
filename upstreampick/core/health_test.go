package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/valyala/fasthttp"
)

func TestHealthMarksUnhealthyAfterTwoFailuresAndRestoresAfterOne(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		cfg := testConfig(addrA) // nothing answers there yet
		p := picker(n, cfg)
		// Rounds at 0, 50 ms, 100 ms, ...: after the first failure the upstream is still healthy.
		time.Sleep(cfg.HealthInterval / 2)
		if u, _ := upstreamStatus(p, addrA); !u.Healthy {
			t.Fatalf("unhealthy after one failed health dial: %+v", u)
		}
		time.Sleep(cfg.HealthInterval)
		u, _ := upstreamStatus(p, addrA)
		if u.Healthy || u.Active {
			t.Fatalf("after two failed health dials: %+v, want unhealthy", u)
		}
		if u.Sampled || u.Tier != noTier {
			t.Fatalf("failed dials must not be samples: %+v", u)
		}

		n.Serve(addrA, 3*time.Millisecond, nil)
		time.Sleep(cfg.HealthInterval) // one more round, one successful dial
		u, _ = upstreamStatus(p, addrA)
		if !u.Healthy || !u.Sampled || !u.Active || u.RTTSeconds != 0.003 {
			t.Fatalf("after one successful health dial: %+v, want healthy, active, RTT 3 ms", u)
		}
	})
}

// TestHealthCheckAndRequestRecoverThroughOnePath makes an upstream unhealthy, then lets a health check or a
// successful request find it reachable: either way it is healthy and pickable again, and its failure count
// starts over.
func TestHealthCheckAndRequestRecoverThroughOnePath(t *testing.T) {
	for _, via := range []string{"health check", "request"} {
		t.Run(via, func(t *testing.T) {
			bubble(t, func(t *testing.T, n *memnet.Net) {
				n.Serve(addrA, time.Millisecond, nil)
				cfg := testConfig(addrA)
				cfg.HealthInterval, cfg.HealthTimeout = time.Hour, time.Second // the test runs the rounds
				p := picker(n, cfg)
				eventually(t, "first health round", func() bool { return allSampled(p) })
				p.mu.Lock()
				u := p.ups[0]
				p.mu.Unlock()

				p.failed(u)
				p.failed(u)
				if st, _ := upstreamStatus(p, addrA); st.Healthy || st.Active {
					t.Fatalf("after two failures: %+v, want unhealthy and inactive", st)
				}
				if _, ok := p.Pick(); ok {
					t.Fatal("an unhealthy upstream was picked")
				}

				switch via {
				case "health check":
					p.round()
				case "request":
					req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
					defer fasthttp.ReleaseRequest(req)
					defer fasthttp.ReleaseResponse(resp)
					req.SetRequestURI("http://upstream/")
					if err := send(p, u, req, resp); err != nil {
						t.Fatal(err)
					}
				}
				if st, _ := upstreamStatus(p, addrA); !st.Healthy || !st.Active {
					t.Fatalf("after a %s reached it: %+v, want healthy and active", via, st)
				}
				if server, ok := p.Pick(); !ok || server != addrA {
					t.Fatalf("Pick() = %q, %v after recovery", server, ok)
				}
				// The failure count started over: one failure is not two in a row.
				p.failed(u)
				if st, _ := upstreamStatus(p, addrA); !st.Healthy {
					t.Fatalf("one failure after recovery made it unhealthy: %+v", st)
				}
			})
		})
	}
}

// TestHealthSampleIsTheDialTime: with a custom Dial, a health sample is the time the dial took.
func TestHealthSampleIsTheDialTime(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, 2*time.Millisecond, nil)
		n.Serve(addrB, 30*time.Millisecond, nil)
		cfg := testConfig(addrA, addrB)
		cfg.HealthInterval, cfg.HealthTimeout = 100*time.Millisecond, 50*time.Millisecond
		p := picker(n, cfg)
		time.Sleep(cfg.HealthTimeout)
		a, _ := upstreamStatus(p, addrA)
		b, _ := upstreamStatus(p, addrB)
		if a.RTTSeconds != 0.002 || b.RTTSeconds != 0.030 || a.Tier != 0 || b.Tier != 1 {
			t.Fatalf("a %+v, b %+v: want RTT 2 ms tier 0 and 30 ms tier 1", a, b)
		}
		// A dial slower than HealthTimeout is a failure, not a sample.
		n.Serve(addrB, time.Second, nil)
		time.Sleep(2*cfg.HealthInterval + 10*time.Millisecond) // dials at 100 and 200 ms time out at 150 and 250 ms
		if b, _ := upstreamStatus(p, addrB); b.Healthy || b.RTTSeconds != 0.030 {
			t.Fatalf("b %+v after two timed-out dials: want unhealthy, average unchanged", b)
		}
	})
}

func TestNameResolutionIsNotTimed(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve("10.0.0.3:8080", time.Millisecond, nil)
		cfg := testConfig("http://upstream.test:8080")
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
			return []string{"10.0.0.3"}, nil
		}
		p := picker(n, cfg)
		eventually(t, "measured", func() bool { return allSampled(p) })
		u := p.Status().Upstreams[0]
		if u.RTTSeconds != 0.001 || !u.Healthy {
			t.Fatalf("status %+v: the resolver's 200 ms must not be part of the 1 ms connect time", u)
		}
		mu.Lock()
		defer mu.Unlock()
		if asked[0] != "upstream.test" {
			t.Fatalf("resolver asked %q", asked)
		}
	})
}

func TestResolutionFailureCounts(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve("10.0.0.3:80", time.Millisecond, nil)
		cfg := testConfig("http://upstream.test:80")
		cfg.LookupHost = func(context.Context, string) ([]string, error) { return nil, errors.New("no such host") }
		p := picker(n, cfg)
		eventually(t, "unhealthy", func() bool { u, _ := upstreamStatus(p, "http://upstream.test:80"); return !u.Healthy })
		if n.Dials("10.0.0.3:80") != 0 {
			t.Fatal("dialled although the name did not resolve")
		}
	})
}

// TestHealthDoesNotResolveAddresses: an upstream written as an IP address (every discovered one is) is dialled
// without Config.LookupHost, so a resolver that knows only names cannot make it unhealthy.
func TestHealthDoesNotResolveAddresses(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		n.Serve(ip1+":8080", time.Millisecond, nil)
		dns := newFakeDNS()
		dns.SetHost("api.test", ip1)
		cfg := dnsConfig(dns, []string{addrA}, DNS(apiTarget, every))
		cfg.LookupHost = dns.LookupHost
		p := picker(n, cfg)
		eventually(t, "measured", func() bool { return allSampled(p) })
		time.Sleep(5 * cfg.HealthInterval)
		for _, u := range p.Status().Upstreams {
			if !u.Healthy || !u.Sampled {
				t.Fatalf("%+v, want healthy and measured", u)
			}
		}
		if got := dns.Lookups(ip1) + dns.Lookups("10.0.0.1"); got != 0 {
			t.Fatalf("%d lookups of IP addresses before health dials, want none", got)
		}
	})
}
