package fasthttpclient

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The tests in this file use real sockets on 127.0.0.1 and the default dialer; every other Picker test runs
// in a synctest bubble over memNet.

// site is an upstream HTTP server on 127.0.0.1 answering with its name.
type site struct {
	name   string
	addr   string
	srv    *fasthttp.Server
	ln     net.Listener
	once   sync.Once
	served chan struct{}
}

func startSite(t *testing.T, name string) *site {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{name: name, addr: ln.Addr().String(), ln: ln, served: make(chan struct{}), srv: &fasthttp.Server{
		Handler:               func(c *fasthttp.RequestCtx) { c.SetBodyString(name) },
		MaxIdleWorkerDuration: 50 * time.Millisecond,
	}}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(s.stop)
	return s
}

// stop shuts the site down and waits for Serve to return.
func (s *site) stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.ShutdownWithContext(ctx)
		// A shutdown before Serve has taken ln finds nothing to stop; closing ln ends Serve either way.
		_ = s.ln.Close()
		<-s.served
	})
}

// deadAddr returns an address on 127.0.0.1 with nothing listening (connections are refused).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestLoopbackDefaultDialer sends requests through LBClient over real loopback sockets with the default dialer: both upstreams are
// measured (kernel-timed handshakes, well under a second), share tier 0 and get traffic; a refused upstream
// becomes unhealthy.
func TestLoopbackDefaultDialer(t *testing.T) {
	a, b := startSite(t, "a"), startSite(t, "b")
	dead := deadAddr(t)
	cfg := testConfig("http://"+a.addr, b.addr, dead)
	p := newEngine(cfg)
	t.Cleanup(func() { _ = p.Close() })

	waitFor(t, "upstreams measured, the dead one unhealthy", func() bool {
		u, _ := upstreamStatus(p, dead)
		return allSampled(p) && !u.Healthy
	})
	seen := map[string]int{}
	for range 200 {
		body, err := doPath(p, "/x")
		if err != nil {
			t.Fatal(err)
		}
		seen[body]++
	}
	// Both loopback upstreams are one tier: both get traffic (each at least 40 of 200; p < 1e-15 to fail).
	if seen["a"] < 40 || seen["b"] < 40 {
		t.Fatalf("spread %v, want both well used", seen)
	}
	var picks uint64
	for _, u := range p.Status().Upstreams {
		if u.Server == dead {
			if u.Healthy || u.Active || u.Sampled {
				t.Fatalf("refused upstream %+v, want unhealthy, inactive, unmeasured", u)
			}
			continue
		}
		if u.Tier != 0 || !u.Healthy || !u.Active || u.RTTSeconds <= 0 || u.RTTSeconds > 1 || u.Draining {
			t.Fatalf("upstream status %+v", u)
		}
		picks += u.Picks
	}
	if picks != 200 {
		t.Fatalf("picks %d, want 200", picks)
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
