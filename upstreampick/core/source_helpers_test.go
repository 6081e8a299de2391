package core

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
)

// timeoutFrom is a DNS timeout whose text names a local port, as the resolver's does.
func timeoutFrom(name string, port int) error {
	return &net.DNSError{Err: fmt.Sprintf("read udp 10.0.0.5:%d->10.96.0.10:53: i/o timeout", port), Name: name,
		Server: "10.96.0.10:53", IsTimeout: true}
}

// logBook is a Logger that records its lines.
type logBook struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBook) Warnf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

// with returns the lines that contain s.
func (l *logBook) with(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// fakeDNS is the in-memory network's resolver.
type fakeDNS = memnet.DNS

var (
	newFakeDNS = memnet.NewDNS
	nxdomain   = memnet.NXDomain
)

// serveAPI serves each of ips on port 8080 of n, 1 ms away, and returns a resolver where api.test holds them.
func serveAPI(n *memnet.Net, ips ...string) *fakeDNS {
	for _, ip := range ips {
		n.Serve(ip+":8080", time.Millisecond, nil)
	}
	dns := newFakeDNS()
	dns.SetHost("api.test", ips...)
	return dns
}

// dnsConfig is testConfig with discovery through r.
func dnsConfig(r Resolver, servers []string, ds ...Discovery) config {
	cfg := testConfig(servers...)
	cfg.Discover, cfg.Resolver = ds, r
	return cfg
}

// midInterval sleeps until half an interval after start (when NewEngine resolved), so that steps of whole intervals
// land between resolutions. The caller must not be later than that already.
func midInterval(t *testing.T, start time.Time, interval time.Duration) {
	t.Helper()
	d := time.Until(start.Add(interval / 2))
	if d <= 0 {
		t.Fatalf("already %v past the middle of the first interval", -d)
	}
	time.Sleep(d)
}

// servers returns the upstreams of p's Status in order.
func servers(p *Engine) []string {
	var out []string
	for _, u := range p.Status().Upstreams {
		out = append(out, u.Server)
	}
	return out
}

// discovery returns the DiscoveryStatus of target.
func discovery(p *Engine, target string) DiscoveryStatus {
	for _, d := range p.Status().Discovery {
		if d.Target == target {
			return d
		}
	}
	return DiscoveryStatus{}
}

// step lets d of the bubble's time pass, then waits for everything due by then (a resolution at that
// instant included) to be done.
func step(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
