package core

import (
	"context"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

const (
	webTarget = "_http._tcp.web.test"
	web1      = "http://10.0.2.1:9000"
	web2      = "http://10.0.2.2:9000"
)

// webDNS is a resolver where api.test holds ip1 and ip2, and the SRV records of webTarget point at w1 and w2
// (port 9000) and at the static server addrA by its address.
func webDNS() *fakeDNS {
	dns := newFakeDNS()
	dns.SetHost("api.test", ip2, ip1)
	dns.SetHost("w1.web.test", "10.0.2.1")
	dns.SetHost("w2.web.test", "10.0.2.2")
	dns.SetSRV(webTarget,
		&net.SRV{Target: "w2.web.test.", Port: 9000, Priority: 10, Weight: 1},
		&net.SRV{Target: "w1.web.test.", Port: 9000, Priority: 20, Weight: 1},
		&net.SRV{Target: "10.0.0.1", Port: 8080})
	return dns
}

// TestDiscoverMixesStaticServersAndTwoNames: the static servers come first, then each name's addresses by
// address; an address both static and discovered is one upstream. SetServers replaces the static part only:
// a server it drops stays while a name lists it, and with discovery an empty list is allowed.
func TestDiscoverMixesStaticServersAndTwoNames(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		for _, a := range []string{addrA, addrB, ip1 + ":8080", ip2 + ":8080", "10.0.2.1:9000", "10.0.2.2:9000"} {
			n.Serve(a, time.Millisecond, nil)
		}
		dns := webDNS()
		reg := prometheus.NewRegistry()
		cfg := dnsConfig(dns, []string{addrA}, DNS(apiTarget, every), DNSSRV(webTarget, "http", 2*every))
		cfg.Registerer = reg
		p := picker(n, cfg)
		eventually(t, "measured", func() bool { return allSampled(p) })

		want := []string{addrA, up1, up2, web1, web2}
		if got := servers(p); !slices.Equal(got, want) {
			t.Fatalf("upstreams %v, want %v", got, want)
		}
		sources := map[string]string{addrA: "", up1: apiTarget, up2: apiTarget, web1: webTarget, web2: webTarget}
		for _, u := range p.Status().Upstreams {
			if u.Discovered != sources[u.Server] || !u.Active || u.Tier != 0 {
				t.Fatalf("%+v, want discovered by %q, active", u, sources[u.Server])
			}
		}
		st := p.Status().Discovery
		if len(st) != 2 || st[0].Target != apiTarget || st[0].Type != "dns" || st[0].IntervalSeconds != 1 ||
			st[1].Target != webTarget || st[1].Type != "dns-srv" || st[1].IntervalSeconds != 2 ||
			!slices.Equal(st[1].Addresses, []string{"http://10.0.0.1:8080", web1, web2}) {
			t.Fatalf("discovery %+v", st)
		}
		seen := map[string]int{}
		for range 100 {
			_, body := memnet.Get(lbApp(p), "/")
			seen[body]++
		}
		if len(seen) != 5 {
			t.Fatalf("answers %v, want all five upstreams", seen)
		}
		if got := testutil.CollectAndCount(reg, "fiberguard_upstreampick_resolutions_total"); got != 8 {
			t.Fatalf("%d resolutions_total series, want 4 results for each of 2 names", got)
		}
		if got := testutil.CollectAndCount(reg, "fiberguard_upstreampick_discovered"); got != 2 {
			t.Fatalf("%d discovered series, want 2", got)
		}
		if got := resolutions(t, reg, webTarget, "ok"); got != 1 {
			t.Fatalf("SRV resolutions %v, want NewEngine's", got)
		}

		// The static part replaced: addrA stays, now as a discovered address.
		if err := p.SetServers([]string{addrB}); err != nil {
			t.Fatal(err)
		}
		want = []string{addrB, up1, up2, "http://10.0.0.1:8080", web1, web2}
		if got := servers(p); !slices.Equal(got, want) {
			t.Fatalf("upstreams after SetServers %v, want %v", got, want)
		}
		if u, _ := upstreamStatus(p, "http://10.0.0.1:8080"); u.Draining || u.Discovered != webTarget || !u.Sampled {
			t.Fatalf("%+v, want the former static server kept, with its state, as discovered", u)
		}
		// No static server at all: allowed with discovery, and the discovered ones stay.
		if err := p.SetServers(nil); err != nil {
			t.Fatalf("SetServers(nil) with discovery: %v", err)
		}
		eventually(t, "static server drained", func() bool { _, ok := upstreamStatus(p, addrB); return !ok })
		if got := servers(p); !slices.Equal(got, want[1:]) {
			t.Fatalf("upstreams after SetServers(nil) %v, want %v", got, want[1:])
		}
	})
}

// TestDiscoverSRVTargetFailure: an SRV target that fails to resolve keeps its addresses (a partial answer),
// one that no longer exists loses them like a removed record.
func TestDiscoverSRVTargetFailure(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		for _, a := range []string{addrA, "10.0.2.1:9000", "10.0.2.2:9000"} {
			n.Serve(a, time.Millisecond, nil)
		}
		dns := webDNS()
		reg := prometheus.NewRegistry()
		cfg := dnsConfig(dns, nil, DNSSRV(webTarget, "http", every))
		cfg.Registerer = reg
		p := picker(n, cfg)

		dns.Fail("w1.web.test", timeoutFrom("w1.web.test", 41000))
		dns.Remove("w2.web.test")
		for range removeAfter {
			step(every)
		}
		d := discovery(p, webTarget)
		if !slices.Equal(d.Addresses, []string{"http://10.0.0.1:8080", web1}) || len(d.Missing) != 0 ||
			d.LastError != timeoutFrom("w1.web.test", 41000).Error() {
			t.Fatalf("discovery %+v: want w1 kept through its failure, w2 gone", d)
		}
		if got := resolutions(t, reg, webTarget, "partial"); got != removeAfter {
			t.Fatalf("partial resolutions %v, want %d", got, removeAfter)
		}

		// Every target failing changes nothing.
		dns.Fail("w1.web.test", errRefused)
		dns.SetSRV(webTarget, &net.SRV{Target: "w1.web.test", Port: 9000})
		for range removeAfter {
			step(every)
		}
		if d := discovery(p, webTarget); len(d.Addresses) != 2 {
			t.Fatalf("discovery %+v, want nothing removed while the one target fails", d)
		}
		if got := resolutions(t, reg, webTarget, "error"); got != removeAfter {
			t.Fatalf("error resolutions %v, want %d", got, removeAfter)
		}
	})
}

// TestDiscoverFirstAnswerIsBounded: NewEngine waits for the first answers at most half the interval; a name that
// did not answer is resolved again at its interval, and at once when nothing is pickable.
func TestDiscoverFirstAnswerIsBounded(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(ip1+":8080", time.Millisecond, nil)
		dns := newFakeDNS()
		dns.Hang("api.test")
		start := time.Now()
		p := picker(n, dnsConfig(dns, nil, DNS(apiTarget, 4*every)))
		if d := time.Since(start); d != 2*every {
			t.Fatalf("New took %v, want half the interval (%v)", d, 2*every)
		}
		d := discovery(p, apiTarget)
		if len(p.Status().Upstreams) != 0 || d.ResolvedAt != nil || d.LastError == "" {
			t.Fatalf("after a timed-out first answer: %+v", p.Status())
		}
		if _, ok := p.Pick(); ok {
			t.Fatal("picked with no upstream")
		}
		// Nothing pickable: the next resolution comes onDemandGap after NewEngine's, not an interval.
		dns.SetHost("api.test", ip1)
		step(onDemandGap)
		if got := servers(p); !slices.Equal(got, []string{up1}) {
			t.Fatalf("upstreams %v one gap after NewEngine, want the address found on demand", got)
		}
	})
}

// TestDiscoverStopsWithCloseAndContext: Close and Config.Context stop the resolutions, a lookup in flight
// included, and leave no goroutine.
func TestDiscoverStopsWithCloseAndContext(t *testing.T) {
	for _, how := range []string{"Close", "Context"} {
		t.Run(how, func(t *testing.T) {
			bubble(t, func(t *testing.T, n *memnet.Net) {
				n.Serve(ip1+":8080", time.Millisecond, nil)
				before := goleak.IgnoreCurrent()
				dns := webDNS()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cfg := dnsConfig(slowCancel{dns}, []string{addrA}, DNS(apiTarget, every), DNSSRV(webTarget, "http", every))
				cfg.Dial, cfg.Context = n.Dial, ctx
				p := newEngine(cfg)
				step(3 * every)
				dns.Hang("api.test") // the next lookup is in flight when the picker stops
				step(every)
				errs := discovery(p, apiTarget).Errors

				if how == "Close" {
					start := time.Now()
					if err := p.Close(); err != nil {
						t.Fatal(err)
					}
					if d := time.Since(start); d != cancelDelay {
						t.Fatalf("Close took %v, want it to wait %v for the lookup in flight", d, cancelDelay)
					}
					// Close waited for its goroutines: once those that already returned from their last call have
					// ended (Wait lets no fake time pass, so a lookup still in flight would stay), none is left.
					synctest.Wait()
					if stacks := goroutines(); strings.Contains(stacks, "core.(*Engine).discover(") {
						t.Fatalf("a discovery goroutine outlived Close:\n%s", stacks)
					}
				} else {
					cancel()
					synctest.Wait()
				}
				lookups := dns.Lookups("api.test") + dns.Lookups(webTarget)
				step(10 * every)
				if got := dns.Lookups("api.test") + dns.Lookups(webTarget); got != lookups {
					t.Fatalf("%d lookups after %s", got-lookups, how)
				}
				if d := discovery(p, apiTarget); d.Errors != errs {
					t.Fatalf("the cancelled lookup was recorded: %+v", d)
				}
				goleak.VerifyNone(t, before)
				_ = p.Close()
			})
		})
	}
}

// goroutines returns the stacks of every goroutine.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// cancelDelay is how long slowCancel takes to give up a lookup once its context is done.
const cancelDelay = 100 * time.Millisecond

// slowCancel is a resolver that returns cancelDelay after a lookup's context is done, as one waiting for its
// socket to close would.
type slowCancel struct{ *fakeDNS }

func (s slowCancel) LookupHost(ctx context.Context, host string) ([]string, error) {
	addrs, err := s.fakeDNS.LookupHost(ctx, host)
	if ctx.Err() != nil {
		time.Sleep(cancelDelay)
	}
	return addrs, err
}
