package main

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"

	"github.com/fiberguard/fiberguard/examples/internal/demo"

	"github.com/prometheus/client_golang/prometheus"
)

// measuredUpstreams waits until every one of n upstreams of /status has a connect-time sample and, with
// tiered, until exactly one of them is out of the nearest tier, and returns the status. (On a busy machine a
// near upstream's connect time can stray past the nearest tier's limit for a moment.)
func measuredUpstreams(t *testing.T, g *gateway, n int, tiered bool) upstreampickcore.Status {
	t.Helper()
	var st upstreampickcore.Status
	deadline := time.Now().Add(15 * time.Second)
	for {
		part := statusOf(t, g, "upstreampick", &st)
		measured, far := len(st.Upstreams) == n, 0
		for _, u := range st.Upstreams {
			measured = measured && u.Sampled
			if u.Tier > 0 {
				far++
			}
		}
		if measured && (far == 1) == tiered {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstreams not measured (tiered: %v) within 15 s: %s", tiered, part)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The demo has two near upstreams and a far one (site-c, behind a 20 ms dial): once measured, the far one
// sits in a tier of its own and the near ones share the traffic.
func TestUpstreampickProxiesToTheNearDemoUpstreams(t *testing.T) {
	// Load shedding in dry-run: a busy test machine must not turn a proxied answer into a 503.
	g := newTestGateway(t, map[string]string{"FIBERGUARD_LOADSHED_DRYRUN": "1"})
	st := measuredUpstreams(t, g, 3, true)
	var far *upstreampickcore.UpstreamStatus
	for i, u := range st.Upstreams {
		if u.Tier > 0 {
			if far != nil {
				t.Fatalf("two upstreams out of the nearest tier: %+v", st.Upstreams)
			}
			far = &st.Upstreams[i]
		}
	}
	// The connect-time average climbs to the 20 ms over a few health rounds; it is past a near one's at once.
	if far.Active || !far.Healthy || far.RTTSeconds < 2e-3 {
		t.Fatalf("the far upstream %+v, want healthy, inactive and measured further than 2 ms", *far)
	}
	before := far.Picks

	seen := map[string]int{}
	for range 60 {
		code, body := fetch(t, g, "/proxy/hello")
		if code != 200 || !strings.HasSuffix(body, " GET /proxy/hello\n") || !strings.HasPrefix(body, "site-") {
			t.Fatalf("/proxy/hello: %d %q", code, body)
		}
		seen[strings.Fields(body)[0]]++
	}
	// The two near ones share the nearest tier: each misses 60 random picks with p < 1e-17.
	if len(seen) != 2 || seen["site-a"] == 0 || seen["site-b"] == 0 {
		t.Fatalf("answered by %v, want site-a and site-b only", seen)
	}

	st = measuredUpstreams(t, g, 3, true)
	var picks uint64
	for _, u := range st.Upstreams {
		if u.Server == far.Server {
			if u.Picks != before {
				t.Errorf("the far upstream was picked %d times, want none", u.Picks-before)
			}
			continue
		}
		if u.Tier != 0 || !u.Healthy || !u.Active {
			t.Errorf("near upstream %+v, want tier 0, healthy, active", u)
		}
		picks += u.Picks
	}
	if st.Mode != "latency" || picks < 60 {
		t.Errorf("status mode %q, near picks %d; want latency, at least 60", st.Mode, picks)
	}
	if _, body := fetch(t, g, "/metrics"); !strings.Contains(body, "fiberguard_upstreampick_tier") {
		t.Error("/metrics lacks fiberguard_upstreampick_tier")
	}
}

// With FIBERGUARD_UPSTREAMPICK_SERVERS, the gateway warns at start when no upstream accepts a connection, and
// says nothing when one does.
func TestUpstreampickWarnsWhenNoUpstreamAnswers(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dead, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	for servers, warned := range map[string]bool{
		"http://" + deadAddr: true,
		"http://" + deadAddr + ",http://" + ln.Addr().String(): false,
	} {
		var logged []string
		g, err := newGateway(env{
			registry: prometheus.NewRegistry(),
			getenv: func(k string) string {
				return map[string]string{"FIBERGUARD_UPSTREAMPICK_SERVERS": servers}[k]
			},
			logf: func(format string, v ...any) { logged = append(logged, fmt.Sprintf(format, v...)) },
		})
		if err != nil {
			t.Fatal(err)
		}
		g.close()
		text := strings.Join(logged, "\n")
		if got := strings.Contains(text, "no upstream of FIBERGUARD_UPSTREAMPICK_SERVERS accepts a connection"); got != warned {
			t.Errorf("servers %s: warned %v, want %v: %q", servers, got, warned, text)
		}
		if warned && (!strings.Contains(text, "http://"+deadAddr+": dial tcp") || !strings.Contains(text, "503")) {
			t.Errorf("the warning names neither the server and its error nor the 503s: %q", text)
		}
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
		addr, shutdown, err := demo.Upstream("site", "")
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
	var st upstreampickcore.Status
	statusOf(t, g, "upstreampick", &st)
	if st.Rejected < 1 || len(st.Upstreams) != 1 || st.Upstreams[0].Healthy {
		t.Fatalf("status %+v, want the upstream unhealthy and the rejection counted", st)
	}
}
