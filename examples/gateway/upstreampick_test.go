package main

import (
	"net"
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
