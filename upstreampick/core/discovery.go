package core

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resolver resolves the names of Config.Discover. *net.Resolver implements it. LookupSRV is called with empty
// service and proto, so that the name is looked up as written.
type Resolver interface {
	LookupHost(ctx context.Context, host string) (addrs []string, err error)
	LookupSRV(ctx context.Context, service, proto, name string) (cname string, addrs []*net.SRV, err error)
}

// DefaultDiscoverInterval is the time between two resolutions of a name when DNS or DNSSRV is given 0.
const DefaultDiscoverInterval = 5 * time.Second

// Discovery is a DNS name whose records are upstreams. Make one with DNS or DNSSRV; the zero value is invalid
// (New panics on it, as on invalid arguments to DNS or DNSSRV).
type Discovery struct {
	srv bool
	// target is the argument as written: the name's key in Status and its metrics' target label.
	target string
	// key tells two discoveries apart however they are spelt.
	key      string
	scheme   string
	host     string // DNS: the name of the A/AAAA records; DNSSRV: the SRV name
	port     string // DNS only; an SRV record carries its own
	interval time.Duration
	// err says why the arguments are invalid.
	err error
}

// DNS discovers upstreams from the A and AAAA records of server's host: server is written as in Config.Servers
// ("http://api.ns.svc:8080"), and each address it resolves to is an upstream with server's scheme and port,
// named "scheme://address:port". The name is resolved every interval (0: DefaultDiscoverInterval).
func DNS(server string, interval time.Duration) Discovery {
	d := Discovery{target: server, interval: interval}
	t, err := parseServer(server)
	if err != nil {
		d.err = errors.New("DNS(" + strconv.Quote(server) + "): " + err.Error())
		return d.checkInterval()
	}
	d.scheme, d.host, d.port = "http", t.host, t.port
	if t.tls {
		d.scheme = "https"
	}
	d.key = "dns " + t.key
	return d.checkInterval()
}

// DNSSRV discovers upstreams from the SRV records of name ("_http._tcp.api.ns.svc"), with the given scheme
// ("http" or "https"): each address a record's target resolves to, with the record's port, is an upstream named
// "scheme://address:port". Priorities and weights are not used: latency tiers place every upstream. The name
// is resolved every interval (0: DefaultDiscoverInterval).
func DNSSRV(name, scheme string, interval time.Duration) Discovery {
	d := Discovery{srv: true, target: name, scheme: scheme, interval: interval}
	why := func(s string) Discovery {
		d.err = errors.New("DNSSRV(" + strconv.Quote(name) + ", " + strconv.Quote(scheme) + "): " + s)
		return d
	}
	host := strings.ToLower(strings.TrimSuffix(name, "."))
	switch {
	case host == "" || !hostName(host):
		return why("the name must be a DNS name")
	case scheme != "http" && scheme != "https":
		return why("the scheme must be http or https")
	}
	d.host, d.key = name, "srv "+scheme+" "+host
	return d.checkInterval()
}

// checkInterval applies the default interval, or records a negative one as an error.
func (d Discovery) checkInterval() Discovery {
	switch {
	case d.interval < 0 && d.err == nil:
		d.err = errors.New(d.String() + ": the interval must be positive")
	case d.interval == 0:
		d.interval = DefaultDiscoverInterval
	}
	return d
}

// kind names the record type as in Status: "dns" (A/AAAA) or "dns-srv".
func (d Discovery) kind() string {
	if d.srv {
		return "dns-srv"
	}
	return "dns"
}

// String returns the discovery as it was made, e.g. `DNS("http://api.ns.svc:8080")`.
func (d Discovery) String() string {
	if d.srv {
		return "DNSSRV(" + strconv.Quote(d.target) + ", " + strconv.Quote(d.scheme) + ")"
	}
	return "DNS(" + strconv.Quote(d.target) + ")"
}

// validateDiscover returns why ds is invalid, or "" when it is valid.
func validateDiscover(ds []Discovery) string {
	seen := make(map[string]string, len(ds))
	for i, d := range ds {
		switch {
		case d.target == "" && d.err == nil:
			return "Config.Discover[" + strconv.Itoa(i) + "] must be made with DNS or DNSSRV"
		case d.err != nil:
			return "Config.Discover: " + d.err.Error()
		}
		if first, ok := seen[d.key]; ok {
			return "Config.Discover: " + d.String() + " is listed twice (also as " + first + ")"
		}
		seen[d.key] = d.String()
	}
	return ""
}

// answer is what one resolution of a name found.
type answer struct {
	// targets are the upstreams found, without duplicates.
	targets []target
	// keep holds the keys of upstreams whose presence the answer could not check (the SRV target they came
	// from failed to resolve): they count as neither present nor missing.
	keep map[string]bool
	// hosts maps each SRV target host to the keys it resolved to, for the next resolution's keep.
	hosts map[string][]string
	// err is the failure, or the reason nothing was found (nil when the resolver returned no record and no
	// error); with targets it is a partial failure.
	err error
	// failed reports a failure other than "no such name": with no targets, the answer is an error rather than
	// an empty answer.
	failed bool
}

// result classifies a resolution for the metrics and the log.
type result int

const (
	resultOK      result = iota // addresses found, nothing failed
	resultPartial               // addresses found, but an SRV target failed to resolve (its addresses are kept)
	resultEmpty                 // no address: an empty answer or a name that does not exist
	resultError                 // the resolution failed
	resultCount
)

var resultNames = [resultCount]string{"ok", "partial", "empty", "error"}

func (a answer) result() result {
	switch {
	case len(a.targets) == 0 && a.failed:
		return resultError
	case len(a.targets) == 0:
		return resultEmpty
	case a.err != nil:
		return resultPartial
	}
	return resultOK
}

// lookup resolves d through r. prev maps each SRV target host to the keys it resolved to last time.
func (d Discovery) lookup(ctx context.Context, r Resolver, prev map[string][]string) answer {
	if !d.srv {
		addrs, err := r.LookupHost(ctx, d.host)
		if err != nil {
			return answer{err: err, failed: !notFound(err)}
		}
		return answer{targets: d.targets(nil, map[string]bool{}, addrs, d.port)}
	}

	// Go's resolver returns the valid records beside an error when some were invalid.
	_, records, err := r.LookupSRV(ctx, "", "", d.host)
	if err != nil && len(records) == 0 {
		return answer{err: err, failed: !notFound(err)}
	}
	a := answer{err: err, failed: err != nil, hosts: map[string][]string{}}
	seen := map[string]bool{}
	type hostPort struct{ host, port string }
	var hps []hostPort
	for _, rec := range records {
		host := strings.ToLower(strings.TrimSuffix(rec.Target, "."))
		if host == "" || rec.Port == 0 { // "." : the service is decidedly not available there
			continue
		}
		hps = append(hps, hostPort{host, strconv.Itoa(int(rec.Port))})
	}
	// Each target host once, all at the same time.
	resolved := map[string]*hostAnswer{}
	var wg sync.WaitGroup
	for _, hp := range hps {
		if resolved[hp.host] != nil {
			continue
		}
		h := &hostAnswer{}
		resolved[hp.host] = h
		if _, err := netip.ParseAddr(hp.host); err == nil {
			h.addrs = []string{hp.host}
			continue
		}
		wg.Go(func() { h.addrs, h.err = r.LookupHost(ctx, hp.host) })
	}
	wg.Wait()
	for _, hp := range hps {
		h := resolved[hp.host]
		switch {
		case h.err == nil:
			before := len(a.targets)
			a.targets = d.targets(a.targets, seen, h.addrs, hp.port)
			for _, t := range a.targets[before:] {
				a.hosts[hp.host] = append(a.hosts[hp.host], t.key)
			}
		case notFound(h.err):
			// The target no longer exists: its addresses are missing.
		default:
			if a.err == nil {
				a.err = h.err
			}
			a.failed = true
			if a.keep == nil {
				a.keep = map[string]bool{}
			}
			for _, k := range prev[hp.host] {
				a.keep[k] = true
			}
			a.hosts[hp.host] = prev[hp.host]
		}
	}
	if len(a.targets) == 0 && !a.failed && a.err == nil {
		a.err = errors.New("no SRV record with a target")
	}
	return a
}

// hostAnswer is the resolution of one SRV target host.
type hostAnswer struct {
	addrs []string
	err   error
}

// targets appends to ts an upstream per IP address of addrs with d's scheme and the given port, skipping those
// in seen (and adding the others) and anything that is not an IP address.
func (d Discovery) targets(ts []target, seen map[string]bool, addrs []string, port string) []target {
	for _, s := range addrs {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		host := ip.String()
		key := d.scheme + "://" + net.JoinHostPort(host, port)
		if seen[key] {
			continue
		}
		seen[key] = true
		ts = append(ts, target{server: key, key: key, host: host, port: port, tls: d.scheme == "https", source: d.target})
	}
	return ts
}

// notFound reports whether err says that the name does not exist or has no record of the type asked.
func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// errorKey identifies err for the log, so that one failure repeated is logged once: a DNS error by its name
// and kind, not by the server's address or the local port in its text.
func errorKey(err error) string {
	var de *net.DNSError
	switch {
	case err == nil:
		return "no record"
	case errors.As(err, &de) && de.IsNotFound:
		return de.Name + ": not found"
	case errors.As(err, &de) && de.IsTimeout:
		return de.Name + ": timeout"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &de):
		return de.Name + ": " + de.Err
	}
	return err.Error()
}
