package core

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

func TestLBClientSpreadsAndMeasures(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("a") })
		n.Serve(addrB, 2*time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("b") })
		p := picker(n, testConfig("http://"+addrA, addrB))
		app := lbApp(p)

		eventually(t, "both upstreams measured", func() bool { return allSampled(p) })
		seen := map[string]int{}
		for range 200 {
			code, body := memnet.Get(app, "/x")
			if code != 200 {
				t.Fatalf("status %d body %q", code, body)
			}
			seen[body]++
		}
		// 1 and 2 ms are one tier: both get traffic (each at least 40 of 200; p < 1e-15 to fail).
		if seen["a"] < 40 || seen["b"] < 40 {
			t.Fatalf("spread %v, want both well used", seen)
		}
		st := p.Status()
		if st.Mode != "latency" || len(st.Upstreams) != 2 || st.Admitted != 200 || st.Rejected != 0 {
			t.Fatalf("status %+v", st)
		}
		var picks uint64
		for i, u := range st.Upstreams {
			if u.Tier != 0 || !u.Healthy || !u.Active || u.RTTSeconds != float64(i+1)/1000 || u.Draining {
				t.Fatalf("upstream status %+v", u)
			}
			picks += u.Picks
		}
		if picks != 200 {
			t.Fatalf("picks %d, want 200", picks)
		}
	})
}

func TestSetServersDrains(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		h, started, release := n.Hold("a")
		n.Serve(addrA, time.Millisecond, h)
		n.Serve(addrB, time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("b") })
		reg := prometheus.NewRegistry()
		cfg := testConfig(addrA)
		cfg.Registerer = reg
		p := picker(n, cfg)
		app := lbApp(p)

		// A request in flight on a.
		held := make(chan string, 1)
		go func() {
			_, body := memnet.Get(app, "/hold")
			held <- body
		}()
		memnet.Recv(t, started, "request held on a")

		if err := p.SetServers([]string{addrB}); err != nil {
			t.Fatal(err)
		}
		ua, ok := upstreamStatus(p, addrA)
		if !ok || !ua.Draining || ua.Active || ua.InFlight != 1 {
			t.Fatalf("removed upstream %+v (present %v), want draining, inactive, 1 in flight", ua, ok)
		}
		for range 20 {
			if _, body := memnet.Get(app, "/"); body != "b" {
				t.Fatalf("new request went to %q while a drains", body)
			}
		}
		// Still draining while its request is in flight, health rounds notwithstanding.
		time.Sleep(3 * cfg.HealthInterval)
		if _, ok := upstreamStatus(p, addrA); !ok {
			t.Fatal("draining upstream forgotten while a request was in flight")
		}
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_picks_total"); n != 2 {
			t.Fatalf("picks series %d, want 2 while a drains", n)
		}

		// Re-adding aborts the drain; removing again restarts it.
		if err := p.SetServers([]string{addrB, addrA}); err != nil {
			t.Fatal(err)
		}
		if ua, _ := upstreamStatus(p, addrA); ua.Draining {
			t.Fatalf("re-added upstream %+v, want not draining", ua)
		}
		// Both are 1 ms away, so a is back in b's tier.
		eventually(t, "re-added upstream active", func() bool { ua, _ := upstreamStatus(p, addrA); return ua.Active })
		if err := p.SetServers([]string{addrB}); err != nil {
			t.Fatal(err)
		}

		release()
		if body := memnet.Recv(t, held, "held request"); body != "a" {
			t.Fatalf("in-flight request got %q, want it to finish on a", body)
		}
		eventually(t, "drained upstream forgotten", func() bool { _, ok := upstreamStatus(p, addrA); return !ok })
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_picks_total"); n != 1 {
			t.Fatalf("picks series %d, want 1 after a is forgotten", n)
		}

		for _, bad := range [][]string{nil, {"ftp://x:1"}, {addrB, addrB}} {
			if err := p.SetServers(bad); err == nil || !strings.HasPrefix(err.Error(), "upstreampick: ") {
				t.Fatalf("SetServers(%q) error %v, want a clear error", bad, err)
			}
		}
		if st := p.Status(); len(st.Upstreams) != 1 || st.Upstreams[0].Server != addrB {
			t.Fatalf("a rejected list must change nothing: %+v", st)
		}
	})
}

func TestDrainTimeout(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		h, started, release := n.Hold("a")
		n.Serve(addrA, time.Millisecond, h)
		n.Serve(addrB, time.Millisecond, nil)
		cfg := testConfig(addrA)
		cfg.DrainTimeout = 100 * time.Millisecond
		p := picker(n, cfg)
		done := make(chan error, 1)
		go func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI("http://upstream/hold")
			done <- doRequest(p, req, resp)
		}()
		memnet.Recv(t, started, "request held on a")
		if err := p.SetServers([]string{addrB}); err != nil {
			t.Fatal(err)
		}
		removed := time.Now()
		eventually(t, "drain timeout", func() bool { _, ok := upstreamStatus(p, addrA); return !ok })
		// Forgotten at the first round after the timeout.
		if d := time.Since(removed); d < cfg.DrainTimeout || d > cfg.DrainTimeout+cfg.HealthInterval+5*time.Millisecond {
			t.Fatalf("forgotten %v after removal, want within a round after %v", d, cfg.DrainTimeout)
		}
		release()
		if err := memnet.Recv(t, done, "held request"); err != nil {
			t.Fatalf("request on a forgotten upstream: %v (it must still finish)", err)
		}
	})
}

func TestStatusJSON(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		cfg := testConfig(addrA)
		cfg.Name = "edge"
		p := picker(n, cfg)
		start := time.Now()

		decode := func() map[string]any {
			t.Helper()
			js, err := json.Marshal(p.Status())
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(js, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		keys := func(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

		// Before the first round has ended (its dial takes 1 ms).
		m := decode()
		if got, want := keys(m), []string{"admitted", "discovery", "mode", "name", "rejected", "updated_at", "upstreams"}; !slices.Equal(got, want) {
			t.Fatalf("status keys %v, want %v", got, want)
		}
		if m["name"] != "edge" || m["updated_at"] != nil || m["mode"] != "latency" || m["rejected"] != 0.0 || m["admitted"] != 0.0 {
			t.Fatalf("status before the first round %v, want name edge and updated_at null", m)
		}
		if d, ok := m["discovery"].([]any); !ok || len(d) != 0 {
			t.Fatalf("discovery %v without Config.Discover, want []", m["discovery"])
		}
		u := m["upstreams"].([]any)[0].(map[string]any)
		if got, want := keys(u), []string{"active", "discovered", "draining", "healthy", "in_flight", "picks", "rtt_seconds", "sampled", "server", "tier"}; !slices.Equal(got, want) {
			t.Fatalf("upstream keys %v, want %v", got, want)
		}
		if u["rtt_seconds"] != 0.0 || u["sampled"] != false || u["tier"] != -1.0 || u["server"] != addrA || u["discovered"] != "" {
			t.Fatalf("upstream before the first round %v", u)
		}

		time.Sleep(cfg.HealthInterval / 2)
		st := p.Status()
		if st.UpdatedAt == nil || !st.UpdatedAt.Equal(start.Add(time.Millisecond)) {
			t.Fatalf("updated_at %v, want the end of the first round, %v", st.UpdatedAt, start.Add(time.Millisecond))
		}
		m = decode()
		u = m["upstreams"].([]any)[0].(map[string]any)
		if u["rtt_seconds"] != 0.001 || u["tier"] != 0.0 {
			t.Fatalf("upstream after the first round %v, want rtt_seconds 0.001, tier 0", u)
		}
		// A fresh value every call.
		st.Upstreams[0].Server = "changed"
		*st.UpdatedAt = time.Time{}
		if again := p.Status(); again.Upstreams[0].Server != addrA || again.UpdatedAt.IsZero() {
			t.Fatalf("Status shares its slices or times: %+v", again)
		}
		time.Sleep(cfg.HealthInterval)
		if again := p.Status(); !again.UpdatedAt.Equal(start.Add(cfg.HealthInterval + time.Millisecond)) {
			t.Fatalf("updated_at %v after the second round, want %v", again.UpdatedAt, start.Add(cfg.HealthInterval+time.Millisecond))
		}
	})
}
