package main

import (
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick"
	"github.com/prometheus/client_golang/prometheus"
)

func TestUpstreampickProxiesToDemoUpstreams(t *testing.T) {
	// Load shedding in dry-run: a busy test machine must not turn a proxied answer into a 503.
	g := newTestGateway(t, map[string]string{"FIBERGUARD_LOADSHED_DRYRUN": "1"})
	seen := map[string]bool{}
	for range 60 {
		code, body := fetch(t, g, "/proxy/hello")
		if code != 200 || !strings.HasSuffix(body, " GET /proxy/hello\n") || !strings.HasPrefix(body, "site-") {
			t.Fatalf("/proxy/hello: %d %q", code, body)
		}
		seen[strings.Fields(body)[0]] = true
	}
	// The three demo upstreams share loopback, one tier: all of them serve (each misses 60 picks with p < 1e-10).
	if len(seen) != 3 {
		t.Fatalf("answered by %v, want all three demo upstreams", seen)
	}

	var st upstreampick.Status
	deadline := time.Now().Add(10 * time.Second)
	for {
		part := statusOf(t, g, "upstreampick", &st)
		measured := len(st.Upstreams) == 3
		for _, u := range st.Upstreams {
			measured = measured && u.Sampled
		}
		if measured {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstreams not measured within 10 s: %s", part)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var picks uint64
	for _, u := range st.Upstreams {
		if u.Tier != 0 || !u.Healthy || !u.Active {
			t.Errorf("upstream %+v, want tier 0, healthy, active", u)
		}
		picks += u.Picks
	}
	if st.Mode != "latency" || picks != 60 {
		t.Errorf("status mode %q, picks %d; want latency, 60", st.Mode, picks)
	}
	if _, body := fetch(t, g, "/metrics"); !strings.Contains(body, "fiberguard_upstreampick_tier") {
		t.Error("/metrics lacks fiberguard_upstreampick_tier")
	}
}

func TestUpstreampickConfigErrors(t *testing.T) {
	for _, vars := range []map[string]string{
		{"FIBERGUARD_UPSTREAMPICK_MODE": "nearest"},
		{"FIBERGUARD_UPSTREAMPICK_SERVERS": "ftp://127.0.0.1:21"},
	} {
		g, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(k string) string { return vars[k] }})
		if err == nil {
			g.close()
			t.Fatalf("%v: gateway built, want a setup error", vars)
		}
		if !strings.HasPrefix(err.Error(), "upstreampick: ") {
			t.Fatalf("%v: error %q, want it to name the feature", vars, err)
		}
	}
}

func TestDemoUpstreamShutdownStopsItAtOnce(t *testing.T) {
	// Shut down right after the start, before its Serve goroutine may have run: it must not go on serving.
	for range 20 {
		addr, shutdown, err := startDemoUpstream("site")
		if err != nil {
			t.Fatal(err)
		}
		shutdown()
		if c, err := net.DialTimeout("tcp4", addr, time.Second); err == nil {
			_ = c.Close()
			t.Fatalf("demo upstream %s still accepts connections after its shutdown returned", addr)
		}
	}
}

// TestUpstreampickRejectsWhenEveryUpstreamIsDown: with its only upstream refusing connections, /proxy/* is
// answered as upstreampick's own rejection (503, Retry-After, Fiberguard-Rejected-By), counted in /status.
func TestUpstreampickRejectsWhenEveryUpstreamIsDown(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there any more: every dial is refused

	g := newTestGateway(t, map[string]string{
		"FIBERGUARD_LOADSHED_DRYRUN":      "1",
		"FIBERGUARD_UPSTREAMPICK_SERVERS": "http://" + dead,
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := g.app.Test(httptest.NewRequest("GET", "/proxy/hello", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 503 {
			if by := resp.Header.Get("Fiberguard-Rejected-By"); by != "upstreampick/default" || resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("503 with Fiberguard-Rejected-By %q, Retry-After %q: %s", by, resp.Header.Get("Retry-After"), body)
			}
			break
		}
		// Until the picker has seen the upstream fail, a request fails with 502 Bad Gateway.
		if resp.StatusCode != 502 {
			t.Fatalf("/proxy/hello with the upstream down: %d %s", resp.StatusCode, body)
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead upstream was never taken out of the pick")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var st upstreampick.Status
	statusOf(t, g, "upstreampick", &st)
	if st.Rejected < 1 || len(st.Upstreams) != 1 || st.Upstreams[0].Healthy {
		t.Fatalf("status %+v, want the upstream unhealthy and the rejection counted", st)
	}
}
