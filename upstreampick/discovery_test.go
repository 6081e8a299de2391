package upstreampick

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/gofiber/fiber/v2"
)

// TestDiscoverThroughProxyBalancer: Config.Discover and Config.Resolver reach the core. proxy.Balancer sends
// to the addresses a name resolves to, beside a static server; an address added to the answer takes traffic,
// one removed from it stops getting any; Status shows the name; SetServers(nil) keeps the discovered ones.
func TestDiscoverThroughProxyBalancer(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		const every = time.Second
		for _, a := range []string{addrA, "10.0.1.1:8080", "10.0.1.2:8080"} {
			n.Serve(a, time.Millisecond, nil)
		}
		dns := memnet.NewDNS()
		dns.SetHost("api.test", "10.0.1.1")
		cfg := testConfig(addrA)
		cfg.Discover, cfg.Resolver = []Discovery{DNS("http://api.test:8080", every)}, dns
		p := picker(n, cfg)
		app := balancerApp(p)
		answers := func() map[string]int {
			seen := map[string]int{}
			for range 60 {
				code, body := get(app.Handler(), "/")
				if code != fiber.StatusOK {
					t.Fatalf("status %d body %q", code, body)
				}
				seen[body]++
			}
			return seen
		}
		if seen := answers(); len(seen) != 2 || seen[addrA] == 0 || seen["10.0.1.1:8080"] == 0 {
			t.Fatalf("answers %v, want the static server and the discovered one", seen)
		}

		dns.SetHost("api.test", "10.0.1.2")
		time.Sleep(every)
		synctest.Wait()
		if seen := answers(); seen["10.0.1.2:8080"] == 0 {
			t.Fatalf("answers %v, want the added address used", seen)
		}
		time.Sleep(2 * every) // the third answer without 10.0.1.1
		synctest.Wait()
		if seen := answers(); seen["10.0.1.1:8080"] != 0 || seen["10.0.1.2:8080"] == 0 {
			t.Fatalf("answers %v, want the removed address unused", seen)
		}

		d := p.Status().Discovery
		if len(d) != 1 || d[0].Target != "http://api.test:8080" || !slices.Equal(d[0].Addresses, []string{"http://10.0.1.2:8080"}) {
			t.Fatalf("Status().Discovery %+v", d)
		}
		if err := p.SetServers(nil); err != nil {
			t.Fatalf("SetServers(nil) with Discover: %v", err)
		}
		if seen := answers(); len(seen) != 1 || seen["10.0.1.2:8080"] != 60 {
			t.Fatalf("answers %v after SetServers(nil), want the discovered address alone", seen)
		}
	})
}
