package core

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// target is a parsed server.
type target struct {
	server string // as configured
	// key identifies the server however it is spelt: scheme://host:port with the scheme and host name in lower
	// case, an IP address in its canonical form and the port as a number (the scheme's default when omitted).
	key  string
	host string // for name resolution; lower case
	port string
	tls  bool
	// source is the Discover target that found it; "" for a static server.
	source string
}

// parseServers parses a server list; a server listed twice, in any spelling, is an error.
func parseServers(servers []string) ([]target, error) {
	targets := make([]target, len(servers))
	seen := make(map[string]string, len(servers))
	for i, s := range servers {
		t, err := parseServer(s)
		if err != nil {
			return nil, err
		}
		if first, ok := seen[t.key]; ok {
			if first == s {
				return nil, errors.New(`server "` + s + `" is listed twice`)
			}
			return nil, errors.New(`server "` + s + `" is listed twice (also as "` + first + `")`)
		}
		seen[t.key] = s
		targets[i] = t
	}
	return targets, nil
}

// parseServer parses "http://host[:port]", "https://host[:port]" or "host:port". The port defaults to the
// scheme's (80 or 443) only when the scheme is written: a bare host without a port is more likely a mistake
// than a request for port 80.
func parseServer(s string) (target, error) {
	bad := func(why string) (target, error) {
		return target{}, errors.New(`server "` + s + `" ` + why)
	}
	raw := s
	bare := !strings.Contains(raw, "://")
	if bare {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("is not a valid URL: " + err.Error())
	}
	t := target{server: s}
	switch u.Scheme {
	case "http":
	case "https":
		t.tls = true
	default:
		return bad("must use http or https")
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return bad("must be scheme://host:port only")
	}

	host, port := u.Hostname(), u.Port()
	switch {
	case host == "":
		return bad("has no host")
	case strings.HasSuffix(u.Host, ":"):
		return bad("has an empty port")
	case port == "" && bare:
		return bad("has no port: write host:port, or http://host or https://host for the scheme's default port")
	case port == "" && t.tls:
		port = "443"
	case port == "":
		port = "80"
	}
	// url.Parse checks that the port is digits only.
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return bad("has port " + port + ": it must be 1 to 65535")
	}
	port = strconv.Itoa(n) // "08080" is 8080

	switch ip, err := netip.ParseAddr(host); {
	case err == nil:
		host = ip.String() // "[0:0::1]" is "[::1]"; a zone keeps its case
	case !hostName(host):
		return bad("has an invalid host name " + strconv.Quote(host))
	default:
		host = strings.ToLower(host)
	}
	t.host, t.port = host, port
	t.key = u.Scheme + "://" + net.JoinHostPort(host, port)
	return t, nil
}

// hostName reports whether h is made of the characters a resolvable host name may hold.
func hostName(h string) bool {
	for _, c := range []byte(h) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return true
}
