package core

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// Discovered upstreams of the in-memory network: addresses of api.test on port 8080.
const (
	ip1, ip2, ip3 = "10.0.1.1", "10.0.1.2", "10.0.1.3"
	up1, up2, up3 = "http://" + ip1 + ":8080", "http://" + ip2 + ":8080", "http://" + ip3 + ":8080"
	apiTarget     = "http://api.test:8080"
	every         = time.Second // the discovery interval of these tests
)

// TestDiscoverAddRemoveReAdd: NewEngine waits for the first answer; an added address takes traffic after the next
// resolution; a removed one drains after three answers without it, its request in flight finishing; listed
// again it stops draining with its state; removed again it is forgotten once drained.
func TestDiscoverAddRemoveReAdd(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		started := map[string]<-chan struct{}{}
		release := map[string]func(){}
		for _, ip := range []string{ip1, ip2, ip3} {
			h, st, rel := n.Hold("http://" + ip + ":8080")
			n.Serve(ip+":8080", time.Millisecond, h)
			started["http://"+ip+":8080"], release["http://"+ip+":8080"] = st, rel
		}
		dns := newFakeDNS()
		dns.SetHost("api.test", ip1, ip2)
		reg := prometheus.NewRegistry()
		cfg := dnsConfig(dns, nil, DNS(apiTarget, every))
		cfg.Registerer = reg
		cfg.Timeout = time.Minute // the held request outlives two drains
		p := picker(n, cfg)
		if got := servers(p); !slices.Equal(got, []string{up1, up2}) {
			t.Fatalf("upstreams right after NewEngine %v, want both addresses of the first answer", got)
		}
		app := lbApp(p)
		eventually(t, "measured", func() bool { return allSampled(p) })

		// Added, in another order: the next resolution lists it, and it takes traffic at once.
		dns.SetHost("api.test", ip3, ip2, ip1)
		step(every)
		if got := servers(p); !slices.Equal(got, []string{up1, up2, up3}) {
			t.Fatalf("upstreams after the add %v, want the three by address", got)
		}
		if u, _ := upstreamStatus(p, up3); u.Discovered != apiTarget || u.Draining || !u.Active {
			t.Fatalf("added upstream %+v, want discovered by %s and active", u, apiTarget)
		}
		seen := map[string]int{}
		for range 90 {
			_, body := memnet.Get(app, "/")
			seen[body]++
		}
		for _, s := range []string{up1, up2, up3} {
			if seen[s] < 10 { // a third of 90 expected; p < 1e-7 to fail
				t.Fatalf("answers %v after the add, want all three used", seen)
			}
		}

		// A request held on one upstream: that one goes away.
		held := make(chan string, 1)
		go func() { _, body := memnet.Get(app, "/hold"); held <- body }()
		var victim string
		eventually(t, "request held", func() bool {
			for server, st := range started {
				select {
				case <-st:
					victim = server
					return true
				default:
				}
			}
			return false
		})
		eventually(t, "measured", func() bool { return allSampled(p) })
		before, _ := upstreamStatus(p, victim)
		var rest []string
		for _, ip := range []string{ip1, ip2, ip3} {
			if "http://"+ip+":8080" != victim {
				rest = append(rest, ip)
			}
		}
		dns.SetHost("api.test", rest...)
		for miss := 1; miss < removeAfter; miss++ {
			step(every)
			u, _ := upstreamStatus(p, victim)
			if d := discovery(p, apiTarget); u.Draining || !slices.Equal(d.Missing, []string{victim}) {
				t.Fatalf("after %d answers without %s: %+v, missing %v; want it kept, not draining", miss, victim, u, d.Missing)
			}
		}
		step(every)
		if u, _ := upstreamStatus(p, victim); !u.Draining || u.Active || u.InFlight != 1 {
			t.Fatalf("after %d answers without it, %+v: want draining with its request in flight", removeAfter, u)
		}
		for range 30 {
			if _, body := memnet.Get(app, "/"); body == victim {
				t.Fatal("a new request went to the draining upstream")
			}
		}

		// Back in the answer: the drain is aborted and its state kept.
		dns.SetHost("api.test", ip1, ip2, ip3)
		step(every)
		u, _ := upstreamStatus(p, victim)
		if u.Draining || !u.Active || !u.Sampled || u.RTTSeconds != before.RTTSeconds || u.Picks < before.Picks ||
			u.Discovered != apiTarget {
			t.Fatalf("re-added %+v (before %+v): want active with its average and picks", u, before)
		}

		// Gone again: it drains, its request finishes there, and it is forgotten.
		dns.SetHost("api.test", rest...)
		for range removeAfter {
			step(every)
		}
		if u, _ := upstreamStatus(p, victim); !u.Draining {
			t.Fatalf("removed again %+v, want draining", u)
		}
		release[victim]()
		if body := memnet.Recv(t, held, "held request"); body != victim {
			t.Fatalf("the request in flight got %q, want it answered by %s", body, victim)
		}
		eventually(t, "drained upstream forgotten", func() bool { _, ok := upstreamStatus(p, victim); return !ok })
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_picks_total"); n != 2 {
			t.Fatalf("picks series %d, want 2 once the drained one is forgotten", n)
		}
		if d := discovery(p, apiTarget); len(d.Addresses) != 2 || len(d.Missing) != 0 {
			t.Fatalf("discovery %+v, want the two left", d)
		}
	})
}

// TestDiscoverReorderKeepsIdentity: an answer in another order changes nothing (not even the pick set), and an
// answer that adds an address in another order keeps every other upstream's average, tier and picks.
func TestDiscoverReorderKeepsIdentity(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(ip1+":8080", time.Millisecond, nil)
		n.Serve(ip2+":8080", 1500*time.Microsecond, nil)
		n.Serve(ip3+":8080", 30*time.Millisecond, nil)
		n.Serve("10.0.1.4:8080", time.Millisecond, nil)
		dns := newFakeDNS()
		dns.SetHost("api.test", ip1, ip2, ip3)
		cfg := dnsConfig(dns, nil, DNS(apiTarget, every))
		// One health round: only discovery could rebuild the pick set.
		cfg.HealthInterval, cfg.HealthTimeout = time.Hour, 100*time.Millisecond
		p := picker(n, cfg)
		eventually(t, "measured", func() bool { return allSampled(p) })
		for range 10 {
			if err := do(p); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]UpstreamStatus{}
		for _, u := range p.Status().Upstreams {
			want[u.Server] = u
		}
		if want[up1].Tier != 0 || want[up2].Tier != 0 || want[up3].Tier != 1 {
			t.Fatalf("tiers %+v, want 1 and 1.5 ms in tier 0, 30 ms in tier 1", want)
		}
		same := func(what string) {
			t.Helper()
			for _, u := range p.Status().Upstreams {
				w, ok := want[u.Server]
				if !ok {
					continue
				}
				if u.RTTSeconds != w.RTTSeconds || u.Tier != w.Tier || u.Picks != w.Picks || !u.Sampled || u.Draining {
					t.Fatalf("%s: %s is %+v, was %+v", what, u.Server, u, w)
				}
			}
		}

		set := p.set.Load()
		for _, order := range [][]string{{ip3, ip1, ip2}, {ip2, ip3, ip1}, {ip1, ip3, ip2}} {
			dns.SetHost("api.test", order...)
			step(every)
			if p.set.Load() != set {
				t.Fatalf("answer %v rebuilt the pick set: a reordered answer must change nothing", order)
			}
		}
		same("after reordered answers")

		dns.SetHost("api.test", ip3, "10.0.1.4", ip2, ip1)
		step(every)
		same("after a reordered answer that adds one")
		if u, ok := upstreamStatus(p, "http://10.0.1.4:8080"); !ok || u.Picks != 0 {
			t.Fatalf("added upstream %+v (present %v)", u, ok)
		}
	})
}

// TestDiscoverEmptyAnswerKeepsTheSet: an empty answer or a name that no longer exists removes nothing; it is
// counted, shown and logged once; a later answer applies as usual.
func TestDiscoverEmptyAnswerKeepsTheSet(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		dns := serveAPI(n, ip1, ip2)
		var logs logBook
		reg := prometheus.NewRegistry()
		cfg := dnsConfig(dns, nil, DNS(apiTarget, every))
		cfg.Registerer = reg
		p := pickerWith(n, cfg, &logs)
		start := time.Now()
		eventually(t, "measured", func() bool { return allSampled(p) })
		midInterval(t, start, every)

		dns.Remove("api.test") // NXDOMAIN
		for range 2 * removeAfter {
			step(every)
		}
		dns.SetHost("api.test") // NOERROR, no record
		for range 2 * removeAfter {
			step(every)
		}
		st := p.Status()
		for _, u := range st.Upstreams {
			if u.Draining || !u.Active {
				t.Fatalf("%+v after empty answers, want every address kept", u)
			}
		}
		d := st.Discovery[0]
		if len(d.Addresses) != 2 || len(d.Missing) != 0 || d.LastError != "no address" || d.LastErrorAt == nil ||
			!d.LastErrorAt.Equal(time.Now().Add(-every/2)) || d.Errors != 4*removeAfter || d.Resolutions != 4*removeAfter+1 ||
			!d.ResolvedAt.Equal(start) {
			t.Fatalf("discovery %+v, want both kept, the last error at the last resolution and %d errors", d, 4*removeAfter)
		}
		if got := resolutions(t, reg, apiTarget, "empty"); got != 4*removeAfter {
			t.Fatalf("resolutions_total{result=empty} %v, want %d", got, 4*removeAfter)
		}
		// NXDOMAIN and the empty answer are two distinct cases, each logged once.
		if lines := logs.with("an empty answer removes nothing, keeping 2 addresses"); len(lines) != 2 {
			t.Fatalf("logged %q, want one line for NXDOMAIN and one for the empty answer", lines)
		}

		dns.SetHost("api.test", ip2)
		for range removeAfter {
			step(every)
		}
		// Idle, the removed one drained at once.
		if got := servers(p); !slices.Equal(got, []string{up2}) {
			t.Fatalf("upstreams %v, want %s alone once %s is missing from %d answers", got, up2, up1, removeAfter)
		}
		if lines := logs.with("resolves again, to 2 addresses"); len(lines) != 1 {
			t.Fatalf("logged %q, want the recovery once", lines)
		}
	})
}

// resolutions returns the resolutions_total counter of target and result.
func resolutions(t *testing.T, reg *prometheus.Registry, target, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fiberguard_upstreampick_resolutions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["target"] == target && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no resolutions_total{target=%q, result=%q}", target, result)
	return 0
}

// TestDiscoverErrorsKeepTheLastGoodSet: failed resolutions, timed out ones included, keep every address; Status
// and the metric show them; one failure repeated is logged once whatever its text, a new one again.
func TestDiscoverErrorsKeepTheLastGoodSet(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		dns := serveAPI(n, ip1, ip2)
		var logs logBook
		reg := prometheus.NewRegistry()
		cfg := dnsConfig(dns, nil, DNS(apiTarget, every))
		cfg.Registerer = reg
		p := pickerWith(n, cfg, &logs)
		start := time.Now()
		if d := discovery(p, apiTarget); d.ResolvedAt == nil || !d.ResolvedAt.Equal(start) || d.LastErrorAt != nil || d.LastError != "" {
			t.Fatalf("discovery %+v after NewEngine, want resolved and no error", d)
		}
		app := lbApp(p)
		midInterval(t, start, every)

		for i := range 2 * removeAfter {
			dns.Fail("api.test", timeoutFrom("api.test", 40000+i))
			step(every)
		}
		dns.Hang("api.test") // a lookup bounded by half the interval: it ends now
		step(every)
		st := p.Status()
		d := st.Discovery[0]
		if len(st.Upstreams) != 2 || len(d.Addresses) != 2 || !d.ResolvedAt.Equal(start) {
			t.Fatalf("status %+v, want both addresses kept and resolved_at unchanged", st)
		}
		if d.LastErrorAt == nil || !d.LastErrorAt.Equal(time.Now()) ||
			d.LastError != "lookup api.test on 10.96.0.10:53: i/o timeout" || d.Errors != 2*removeAfter+1 {
			t.Fatalf("discovery %+v, want the timeout half an interval after the lookup began, and %d errors", d, 2*removeAfter+1)
		}
		for range 20 {
			if code, body := memnet.Get(app, "/"); code != 200 {
				t.Fatalf("request while DNS fails: %d %q", code, body)
			}
		}
		if got := resolutions(t, reg, apiTarget, "error"); got != 2*removeAfter+1 {
			t.Fatalf("resolutions_total{result=error} %v, want %d", got, 2*removeAfter+1)
		}
		if got := resolutions(t, reg, apiTarget, "ok"); got != 1 {
			t.Fatalf("resolutions_total{result=ok} %v, want 1 (NewEngine's)", got)
		}
		if lines := logs.with("i/o timeout; keeping 2 addresses"); len(lines) != 1 {
			t.Fatalf("logged %q, want the timeouts once", lines)
		}

		dns.Fail("api.test", errRefused)
		step(every)
		step(every)
		if lines := logs.with("connection refused; keeping 2 addresses"); len(lines) != 1 {
			t.Fatalf("logged %q, want the new error once", lines)
		}
		dns.SetHost("api.test", ip1, ip2)
		step(every)
		if d := discovery(p, apiTarget); time.Since(*d.ResolvedAt) >= every || d.LastError != errRefused.Error() {
			t.Fatalf("discovery %+v after recovery: want resolved now, the last error kept", d)
		}
		dns.Fail("api.test", timeoutFrom("api.test", 50000))
		step(every)
		if lines := logs.with("i/o timeout; keeping 2 addresses"); len(lines) != 2 {
			t.Fatalf("logged %q, want the timeout again after a recovery", lines)
		}
	})
}

// errRefused is a failure that is not a *net.DNSError.
var errRefused = errors.New("dial udp 10.96.0.10:53: connection refused")

// TestDiscoverFlappingCausesNoDrainStorm: answers that drop a different address each time drain nothing;
// only three answers in a row without an address drain it.
func TestDiscoverFlappingCausesNoDrainStorm(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		dns := serveAPI(n, ip1, ip2, ip3)
		p := picker(n, dnsConfig(dns, nil, DNS(apiTarget, every)))
		eventually(t, "measured", func() bool { return allSampled(p) })
		app := lbApp(p)

		// Each address missing from at most removeAfter-1 answers in a row.
		flaps := [][]string{{ip1}, {ip2, ip3}, {ip1}, {ip3}, {ip1, ip2}, {ip2}, {ip1, ip3}, {}, {ip2}, {ip1, ip3}}
		for i, answer := range flaps {
			dns.SetHost("api.test", answer...)
			step(every)
			st := p.Status()
			if len(st.Upstreams) != 3 {
				t.Fatalf("answer %d %v: upstreams %+v, want the three", i, answer, st.Upstreams)
			}
			for _, u := range st.Upstreams {
				if u.Draining || !u.Active {
					t.Fatalf("answer %d %v: %+v drains", i, answer, u)
				}
			}
			if code, _ := memnet.Get(app, "/"); code != 200 {
				t.Fatalf("answer %d: status %d", i, code)
			}
		}
		// ip2 was in the last but one answer, and missing from the last.
		dns.SetHost("api.test", ip1, ip3)
		step(every)
		if u, _ := upstreamStatus(p, up2); u.Draining {
			t.Fatalf("%s drains after 2 answers without it", up2)
		}
		step(every)
		// Idle, it may be drained and forgotten already.
		if u, ok := upstreamStatus(p, up2); ok && !u.Draining || slices.Contains(discovery(p, apiTarget).Addresses, up2) {
			t.Fatalf("%s is %+v after 3 answers without it, want it draining or gone", up2, u)
		}
	})
}

// TestDiscoverOnDemandWhenAllAreDown: when no upstream is pickable the names are resolved at once, not at the
// next interval, and then at most once per onDemandGap while nothing is pickable.
func TestDiscoverOnDemandWhenAllAreDown(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		dns := serveAPI(n, ip1, ip2)
		dns.SetHost("api.test", ip1)
		p := picker(n, dnsConfig(dns, nil, DNS(apiTarget, time.Hour)))
		app := lbApp(p)
		eventually(t, "measured", func() bool { return allSampled(p) })
		step(2 * onDemandGap)
		if got := dns.Lookups("api.test"); got != 1 {
			t.Fatalf("%d lookups, want NewEngine's only", got)
		}

		// The one upstream dies and its replacement is in DNS: found as soon as the picker sees nothing left.
		dns.SetHost("api.test", ip2)
		n.Set(ip1+":8080", memnet.Down)
		eventually(t, "upstream unhealthy", func() bool { u, _ := upstreamStatus(p, up1); return !u.Healthy })
		if got := dns.Lookups("api.test"); got != 2 {
			t.Fatalf("%d lookups once nothing is pickable, want a second one at once", got)
		}
		if u, ok := upstreamStatus(p, up2); !ok || !u.Active {
			t.Fatalf("replacement %+v (present %v), want it active", u, ok)
		}
		if code, body := memnet.Get(app, "/"); code != 200 || body != ip2+":8080" {
			t.Fatalf("request after the re-resolution: %d %q", code, body)
		}

		// Everything down: rejected requests ask again and again, resolutions come once per gap.
		n.Set(ip2+":8080", memnet.Down)
		eventually(t, "replacement unhealthy", func() bool { u, _ := upstreamStatus(p, up2); return !u.Healthy })
		from := dns.Lookups("api.test")
		start := time.Now()
		for time.Since(start) < 10*onDemandGap {
			if code, _ := memnet.Get(app, "/"); code != fasthttp.StatusBadGateway {
				t.Fatalf("status %d with nothing pickable, want the 502 of lbApp", code)
			}
			step(onDemandGap / 10)
		}
		if got := dns.Lookups("api.test") - from; got < 9 || got > 11 {
			t.Fatalf("%d resolutions in %v with nothing pickable, want one per %v", got, 10*onDemandGap, onDemandGap)
		}
	})
}
