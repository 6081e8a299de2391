package core

import (
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
)

func TestParseServer(t *testing.T) {
	tests := []struct {
		in         string
		key        string
		host, port string
		tls        bool
	}{
		{"127.0.0.1:8080", "http://127.0.0.1:8080", "127.0.0.1", "8080", false},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", "127.0.0.1", "8080", false},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080", "127.0.0.1", "8080", false},
		{"HTTP://127.0.0.1:8080", "http://127.0.0.1:8080", "127.0.0.1", "8080", false},
		{"127.0.0.1:08080", "http://127.0.0.1:8080", "127.0.0.1", "8080", false},
		{"https://example.com", "https://example.com:443", "example.com", "443", true},
		{"https://Example.COM:443/", "https://example.com:443", "example.com", "443", true},
		{"http://example.com", "http://example.com:80", "example.com", "80", false},
		{"http://10.0.0.1", "http://10.0.0.1:80", "10.0.0.1", "80", false},
		{"https://10.0.0.1", "https://10.0.0.1:443", "10.0.0.1", "443", true},
		{"http://127.0.0.1:443", "http://127.0.0.1:443", "127.0.0.1", "443", false},
		{"[::1]:9000", "http://[::1]:9000", "::1", "9000", false},
		{"http://[0:0::1]", "http://[::1]:80", "::1", "80", false},
		{"http://[FE80::1%25eth0]:1", "http://[fe80::1%eth0]:1", "fe80::1%eth0", "1", false},
		{"my_host.internal:1", "http://my_host.internal:1", "my_host.internal", "1", false},
		{"localhost:65535", "http://localhost:65535", "localhost", "65535", false},
	}
	for _, tt := range tests {
		got, err := parseServer(tt.in)
		if err != nil || got.server != tt.in || got.key != tt.key || got.host != tt.host || got.port != tt.port ||
			got.tls != tt.tls {
			t.Errorf("parseServer(%q) = %+v, %v; want key %s host %s port %s tls %v", tt.in, got, err, tt.key,
				tt.host, tt.port, tt.tls)
		}
	}
}

// badServers are rejected by NewEngine and SetServers alike, each with the reason.
var badServers = []struct{ server, why string }{
	{"", "has no host"},
	{"garbage", "has no port"},
	{"10.0.0.1", "has no port"},
	{"localhost", "has no port"},
	{"[::1]", "has no port"},
	{"127.0.0.1:", "has an empty port"},
	{"http://127.0.0.1:", "has an empty port"},
	{"127.0.0.1:0", "has port 0: it must be 1 to 65535"},
	{"http://127.0.0.1:0", "has port 0: it must be 1 to 65535"},
	{"127.0.0.1:65536", "has port 65536: it must be 1 to 65535"},
	{"127.0.0.1:99999999999999999999", "it must be 1 to 65535"},
	{"127.0.0.1:-1", "is not a valid URL"},
	{"127.0.0.1:http", "is not a valid URL"},
	{":80", "has no host"},
	{"http://", "has no host"},
	{"http://:80", "has no host"},
	{"http://[::1", "is not a valid URL"},
	{"::1:80", "is not a valid URL"},
	{" 127.0.0.1:1", "is not a valid URL"},
	{"127.0.0.1:1 ", "is not a valid URL"},
	{"ftp://127.0.0.1:1", "must use http or https"},
	{"tcp://127.0.0.1:1", "must use http or https"},
	{"http://127.0.0.1:1/path", "must be scheme://host:port only"},
	{"http://127.0.0.1:1?", "must be scheme://host:port only"},
	{"http://user@127.0.0.1:1", "must be scheme://host:port only"},
	{"http://a!b:1", "has an invalid host name"},
	{"http://*:1", "has an invalid host name"},
}

func TestParseServerRejects(t *testing.T) {
	for _, tt := range badServers {
		got, err := parseServer(tt.server)
		if err == nil || !strings.HasPrefix(err.Error(), `server "`+tt.server+`" `) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("parseServer(%q) = %+v, %v; want an error naming it that says %q", tt.server, got, err, tt.why)
		}
	}
}

func TestNewRejectsBadServers(t *testing.T) {
	for _, tt := range badServers {
		msg := newPanic(t, "127.0.0.1:1", tt.server)
		want := `upstreampick: Config.Servers: server "` + tt.server + `" `
		if !strings.HasPrefix(msg, want) || !strings.Contains(msg, tt.why) {
			t.Errorf("NewPicker with %q: panic %q, want %q...%q", tt.server, msg, want, tt.why)
		}
	}
}

// sameServer lists pairs of spellings of one server.
var sameServer = [][2]string{
	{"127.0.0.1:1", "127.0.0.1:1"},
	{"127.0.0.1:1", "http://127.0.0.1:1"},
	{"http://127.0.0.1:1", "HTTP://127.0.0.1:1"},
	{"http://127.0.0.1:1", "http://127.0.0.1:1/"},
	{"127.0.0.1:1", "127.0.0.1:01"},
	{"http://127.0.0.1", "127.0.0.1:80"},
	{"https://127.0.0.1", "https://127.0.0.1:443"},
	{"[::1]:80", "http://[::1]:80"},
	{"http://[::1]", "[0:0::1]:80"},
	{"localhost:80", "LocalHost:80"},
	{"127.0.0.1:80", "HTTP://127.0.0.1:080/"},
}

// otherServer lists pairs of servers that must stay apart: different names are not resolved, and a scheme
// change is a different server.
var otherServer = [][2]string{
	{"localhost:80", "127.0.0.1:80"},
	{"127.0.0.1:80", "[::1]:80"},
	{"127.0.0.1:1", "127.0.0.1:2"},
	{"http://127.0.0.1:443", "https://127.0.0.1:443"},
	{"http://127.0.0.1", "https://127.0.0.1"},
	{"127.0.0.1:1", "127.0.0.2:1"},
}

func TestNewRejectsOneServerSpeltTwice(t *testing.T) {
	for _, pair := range sameServer {
		msg := newPanic(t, pair[0], pair[1])
		want := `upstreampick: Config.Servers: server "` + pair[1] + `" is listed twice`
		if !strings.HasPrefix(msg, want) {
			t.Errorf("NewPicker with %q: panic %q, want %q", pair, msg, want)
		}
		if pair[0] != pair[1] && !strings.Contains(msg, `(also as "`+pair[0]+`")`) {
			t.Errorf("NewPicker with %q: panic %q does not name the first spelling", pair, msg)
		}
	}
}

func TestNewKeepsDistinctServersApart(t *testing.T) {
	for _, pair := range otherServer {
		cfg := testConfig(pair[0], pair[1])
		cfg.HealthInterval, cfg.Dial = time.Hour, refuse // no dial matters here
		p := newEngine(cfg)
		st := p.Status()
		_ = p.Close()
		if len(st.Upstreams) != 2 || st.Upstreams[0].Server != pair[0] || st.Upstreams[1].Server != pair[1] {
			t.Errorf("NewPicker with %q: upstreams %+v, want both as configured", pair, st.Upstreams)
		}
	}
}

func TestSetServersRejectsOneServerSpeltTwice(t *testing.T) {
	cfg := testConfig(addrA)
	cfg.HealthInterval, cfg.Dial = time.Hour, refuse // no dial matters here
	p := newEngine(cfg)
	defer func() { _ = p.Close() }()
	for _, pair := range sameServer {
		if err := p.SetServers([]string{pair[0], pair[1]}); err == nil ||
			!strings.HasPrefix(err.Error(), `upstreampick: SetServers: server "`+pair[1]+`" is listed twice`) {
			t.Errorf("SetServers(%q) error %v, want one saying it is listed twice", pair, err)
		}
	}
	for _, tt := range badServers {
		if err := p.SetServers([]string{addrA, tt.server}); err == nil ||
			!strings.HasPrefix(err.Error(), `upstreampick: SetServers: server "`+tt.server+`" `) ||
			!strings.Contains(err.Error(), tt.why) {
			t.Errorf("SetServers with %q: error %v, want one saying %q", tt.server, err, tt.why)
		}
	}
	if st := p.Status(); len(st.Upstreams) != 1 || st.Upstreams[0].Server != addrA || st.Upstreams[0].Draining {
		t.Fatalf("a rejected list must change nothing: %+v", st)
	}
}

func TestSetServersRespeltKeepsTheUpstream(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		p := picker(n, testConfig(addrA))
		eventually(t, "a measured", func() bool { return allSampled(p) })
		for range 3 {
			if err := do(p); err != nil {
				t.Fatal(err)
			}
		}

		respelt := "HTTP://" + addrA + "/"
		if err := p.SetServers([]string{respelt}); err != nil {
			t.Fatal(err)
		}
		st := p.Status()
		if len(st.Upstreams) != 1 {
			t.Fatalf("upstreams %+v, want the one server, not a new one beside a draining one", st.Upstreams)
		}
		if u := st.Upstreams[0]; u.Server != respelt || u.Draining || !u.Active || !u.Sampled || u.Picks != 3 {
			t.Fatalf("respelt upstream %+v, want it named %q, active, with its samples and 3 picks", u, respelt)
		}
		if server, ok := p.Pick(); !ok || server != respelt {
			t.Fatalf("Pick() = %q, %v; want the new spelling", server, ok)
		}
	})
}

// newPanic calls NewPicker with servers and returns the panic message ("" when it did not panic).
func newPanic(t *testing.T, servers ...string) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		msg, _ = r.(string)
	}()
	cfg := testConfig(servers...)
	cfg.HealthInterval, cfg.Dial = time.Hour, refuse
	_ = newEngine(cfg).Close()
	return ""
}
