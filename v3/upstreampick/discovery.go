package upstreampick

import (
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
)

// Discovery is a DNS name whose records are upstreams, for Config.Discover. Make one with DNS or DNSSRV; the
// zero value is invalid (NewPicker panics on it, as on invalid arguments to DNS or DNSSRV).
type Discovery = core.Discovery

// Resolver resolves the names of Config.Discover. *net.Resolver implements it. LookupSRV is called with empty
// service and proto, so that the name is looked up as written.
type Resolver = core.Resolver

// DiscoveryStatus is the state of one name of Config.Discover in a Status.
type DiscoveryStatus = core.DiscoveryStatus

// DefaultDiscoverInterval is the time between two resolutions of a name when DNS or DNSSRV is given 0.
const DefaultDiscoverInterval = core.DefaultDiscoverInterval

// DNS discovers upstreams from the A and AAAA records of server's host: server is written as in Config.Servers
// ("http://api.ns.svc:8080"), and each address it resolves to is an upstream with server's scheme and port,
// named "scheme://address:port". The name is resolved every interval (0: DefaultDiscoverInterval).
func DNS(server string, interval time.Duration) Discovery { return core.DNS(server, interval) }

// DNSSRV discovers upstreams from the SRV records of name ("_http._tcp.api.ns.svc"), with the given scheme
// ("http" or "https"): each address a record's target resolves to, with the record's port, is an upstream named
// "scheme://address:port". Priorities and weights are not used: latency tiers place every upstream. The name
// is resolved every interval (0: DefaultDiscoverInterval).
func DNSSRV(name, scheme string, interval time.Duration) Discovery {
	return core.DNSSRV(name, scheme, interval)
}
