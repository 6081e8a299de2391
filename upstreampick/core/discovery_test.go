package core

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDiscoveryConstructors(t *testing.T) {
	tests := []struct {
		d                                Discovery
		kind, scheme, host, port, string string
		interval                         time.Duration
	}{
		{DNS("http://API.ns.svc:8080", 0), "dns", "http", "api.ns.svc", "8080", `DNS("http://API.ns.svc:8080")`, DefaultDiscoverInterval},
		{DNS("https://api.ns.svc", time.Second), "dns", "https", "api.ns.svc", "443", `DNS("https://api.ns.svc")`, time.Second},
		{DNS("api.ns.svc.:80", 0), "dns", "http", "api.ns.svc.", "80", `DNS("api.ns.svc.:80")`, DefaultDiscoverInterval},
		{DNSSRV("_http._tcp.api.ns.svc", "http", 0), "dns-srv", "http", "_http._tcp.api.ns.svc", "", `DNSSRV("_http._tcp.api.ns.svc", "http")`, DefaultDiscoverInterval},
		{DNSSRV("_https._tcp.api.", "https", time.Minute), "dns-srv", "https", "_https._tcp.api.", "", `DNSSRV("_https._tcp.api.", "https")`, time.Minute},
	}
	for _, tt := range tests {
		d := tt.d
		if d.err != nil || d.kind() != tt.kind || d.scheme != tt.scheme || d.host != tt.host || d.port != tt.port ||
			d.String() != tt.string || d.interval != tt.interval {
			t.Errorf("%s: %+v", tt.string, d)
		}
	}
}

func TestNewPanicsOnBadDiscover(t *testing.T) {
	tests := []struct {
		ds  []Discovery
		why string
	}{
		{[]Discovery{{}}, "Config.Discover[0] must be made with DNS or DNSSRV"},
		{[]Discovery{DNS("ftp://api.test:1", 0)}, `Config.Discover: DNS("ftp://api.test:1"): server "ftp://api.test:1" must use http or https`},
		{[]Discovery{DNS("api.test", 0)}, `Config.Discover: DNS("api.test"): server "api.test" has no port`},
		{[]Discovery{DNS("http://api.test:8080", -time.Second)}, `Config.Discover: DNS("http://api.test:8080"): the interval must be positive`},
		{[]Discovery{DNSSRV("", "http", 0)}, `Config.Discover: DNSSRV("", "http"): the name must be a DNS name`},
		{[]Discovery{DNSSRV("_http._tcp.a b", "http", 0)}, `Config.Discover: DNSSRV("_http._tcp.a b", "http"): the name must be a DNS name`},
		{[]Discovery{DNSSRV("_x._tcp.api", "", 0)}, `Config.Discover: DNSSRV("_x._tcp.api", ""): the scheme must be http or https`},
		{[]Discovery{DNSSRV("_x._tcp.api", "http", -1)}, `Config.Discover: DNSSRV("_x._tcp.api", "http"): the interval must be positive`},
		{[]Discovery{DNS("http://API.test:8080", 0), DNS("api.test:8080", time.Second)},
			`Config.Discover: DNS("api.test:8080") is listed twice (also as DNS("http://API.test:8080"))`},
		{[]Discovery{DNSSRV("_x._tcp.api", "http", 0), DNSSRV("_X._tcp.api.", "http", 0)},
			`Config.Discover: DNSSRV("_X._tcp.api.", "http") is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.why, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "upstreampick: "+tt.why) {
					t.Fatalf("panic %q, want it to begin %q", msg, "upstreampick: "+tt.why)
				}
			}()
			cfg := dnsConfig(newFakeDNS(), nil, tt.ds...)
			cfg.Dial = refuse
			_ = newEngine(cfg).Close()
		})
	}

	// Valid: discovery alone, and names that differ by scheme, port or record type.
	cfg := dnsConfig(newFakeDNS(), nil, DNS("http://api.test:80", 0), DNS("https://api.test:80", 0),
		DNS("http://api.test:81", 0), DNSSRV("api.test", "http", 0), DNSSRV("api.test", "https", 0))
	cfg.Dial, cfg.HealthInterval = refuse, time.Hour
	_ = newEngine(cfg).Close()
}

func TestDiscoveryLookup(t *testing.T) {
	dns := newFakeDNS()
	dns.SetHost("api.test", "10.0.0.2", "2001:DB8::1", "10.0.0.2", "not an address", "::ffff:10.0.0.3")
	dns.SetHost("a.test", "10.0.0.1")
	dns.SetSRV("_x._tcp.test",
		&net.SRV{Target: "A.test.", Port: 81},
		&net.SRV{Target: "a.test", Port: 81}, // the same upstream twice
		&net.SRV{Target: "a.test", Port: 82},
		&net.SRV{Target: ".", Port: 80},       // "not available here"
		&net.SRV{Target: "a.test.", Port: 0},  // no port
		&net.SRV{Target: "fe80::1", Port: 83}) // an address as the target
	dns.SetSRV("_none._tcp.test", &net.SRV{Target: ".", Port: 0})
	ctx := context.Background()
	keys := func(a answer) []string {
		var out []string
		for _, t := range a.targets {
			out = append(out, t.key)
		}
		return out
	}

	a := DNS("https://api.test:8443", 0).lookup(ctx, dns, nil)
	if want := []string{"https://10.0.0.2:8443", "https://[2001:db8::1]:8443", "https://[::ffff:10.0.0.3]:8443"}; !slices.Equal(keys(a), want) || a.result() != resultOK {
		t.Errorf("A/AAAA answer %v (%v), want %v", keys(a), a.result(), want)
	}
	if u := a.targets[0]; u.server != u.key || !u.tls || u.host != "10.0.0.2" || u.port != "8443" || u.source != "https://api.test:8443" {
		t.Errorf("target %+v", u)
	}

	a = DNSSRV("_x._tcp.test", "http", 0).lookup(ctx, dns, nil)
	if want := []string{"http://10.0.0.1:81", "http://10.0.0.1:82", "http://[fe80::1]:83"}; !slices.Equal(keys(a), want) || a.result() != resultOK {
		t.Errorf("SRV answer %v (%v), want %v", keys(a), a.result(), want)
	}
	if want := []string{"http://10.0.0.1:81", "http://10.0.0.1:82"}; !slices.Equal(a.hosts["a.test"], want) {
		t.Errorf("SRV hosts %v", a.hosts)
	}

	for _, tt := range []struct {
		d    Discovery
		want result
	}{
		{DNS("http://gone.test:80", 0), resultEmpty},
		{DNSSRV("_gone._tcp.test", "http", 0), resultEmpty},
		{DNSSRV("_none._tcp.test", "http", 0), resultEmpty},
	} {
		if got := tt.d.lookup(ctx, dns, nil).result(); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.d, resultNames[got], resultNames[tt.want])
		}
	}
	dns.Fail("api.test", errRefused)
	if a := DNS("http://api.test:80", 0).lookup(ctx, dns, nil); a.result() != resultError || !errors.Is(a.err, errRefused) {
		t.Errorf("failed lookup %+v, want an error", a)
	}
}

func TestErrorKey(t *testing.T) {
	same := [][2]error{
		{timeoutFrom("api.test", 40001), timeoutFrom("api.test", 40002)},
		{nxdomain("api.test"), &net.DNSError{Err: "no such host", Name: "api.test", Server: "10.0.0.53:53", IsNotFound: true}},
		{context.DeadlineExceeded, errors.Join(errors.New("lookup"), context.DeadlineExceeded)},
	}
	for _, p := range same {
		if errorKey(p[0]) != errorKey(p[1]) {
			t.Errorf("%q and %q logged as two errors (%q, %q)", p[0], p[1], errorKey(p[0]), errorKey(p[1]))
		}
	}
	distinct := []error{nil, timeoutFrom("api.test", 1), timeoutFrom("web.test", 1), nxdomain("api.test"),
		&net.DNSError{Err: "server misbehaving", Name: "api.test"}, errRefused}
	keys := map[string]bool{}
	for _, err := range distinct {
		keys[errorKey(err)] = true
	}
	if len(keys) != len(distinct) {
		t.Errorf("keys %v for %d distinct errors", keys, len(distinct))
	}
}
