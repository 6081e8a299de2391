// Package dnsserver is a small authoritative DNS server for end-to-end tests: it answers A, AAAA and SRV
// queries over UDP on 127.0.0.1 from records the test changes while it runs, and gives a net.Resolver that asks
// it and nothing else.
//
// A name with records of any type answers the others with no data (NOERROR, an SOA in the authority section);
// a name without records does not exist (NXDOMAIN). Answers have a TTL of 0, so nothing caches them. An SRV
// answer carries its targets' addresses in the additional section, as real servers do.
package dnsserver

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// SRV is one SRV record: a target host name and a port.
type SRV struct {
	Target string
	Port   uint16
}

// Server is a running DNS server. Create it with Start and stop it with Close.
type Server struct {
	udp  *dns.Server
	addr string
	done chan struct{}

	mu      sync.Mutex
	addrs   map[string][]netip.Addr // by fully qualified lower-case name
	srvs    map[string][]SRV
	queries map[string]int
}

// Start listens on a free UDP port of 127.0.0.1 and serves until Close.
func Start() (*Server, error) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{addr: pc.LocalAddr().String(), done: make(chan struct{}), addrs: map[string][]netip.Addr{},
		srvs: map[string][]SRV{}, queries: map[string]int{}}
	started := make(chan struct{})
	s.udp = &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: func() { close(started) }}
	go func() {
		defer close(s.done)
		_ = s.udp.ActivateAndServe()
	}()
	select {
	case <-started:
	case <-s.done:
		return nil, net.ErrClosed
	}
	return s, nil
}

// Addr is the server's "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Close stops the server and waits for it.
func (s *Server) Close() error {
	err := s.udp.Shutdown()
	<-s.done
	return err
}

// Resolver returns a resolver that sends every query to s.
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.addr)
	}}
}

// SetAddrs makes name's A and AAAA records ips (IPv4 and IPv6 addresses); none removes them.
func (s *Server) SetAddrs(name string, ips ...string) {
	parsed := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		parsed = append(parsed, netip.MustParseAddr(ip))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(parsed) == 0 {
		delete(s.addrs, fqdn(name))
		return
	}
	s.addrs[fqdn(name)] = parsed
}

// SetSRV makes name's SRV records recs; none removes them.
func (s *Server) SetSRV(name string, recs ...SRV) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(recs) == 0 {
		delete(s.srvs, fqdn(name))
		return
	}
	s.srvs[fqdn(name)] = recs
}

// Queries returns how many questions about name s answered, of any type.
func (s *Server) Queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[fqdn(name)]
}

func fqdn(name string) string { return dns.Fqdn(strings.ToLower(name)) }

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	s.mu.Lock()
	for _, q := range r.Question {
		name := fqdn(q.Name)
		s.queries[name]++
		addrs, srvs := s.addrs[name], s.srvs[name]
		if addrs == nil && srvs == nil {
			m.Rcode = dns.RcodeNameError
			m.Ns = append(m.Ns, soa())
			continue
		}
		switch q.Qtype {
		case dns.TypeA, dns.TypeAAAA:
			m.Answer = append(m.Answer, addrRRs(q.Name, addrs, q.Qtype)...)
		case dns.TypeSRV:
			for _, rec := range srvs {
				m.Answer = append(m.Answer, &dns.SRV{Hdr: header(q.Name, dns.TypeSRV), Priority: 10, Weight: 10,
					Port: rec.Port, Target: dns.Fqdn(rec.Target)})
				target := fqdn(rec.Target)
				m.Extra = append(m.Extra, addrRRs(target, s.addrs[target], dns.TypeA)...)
				m.Extra = append(m.Extra, addrRRs(target, s.addrs[target], dns.TypeAAAA)...)
			}
		}
		if len(m.Answer) == 0 {
			m.Ns = append(m.Ns, soa())
		}
	}
	s.mu.Unlock()
	_ = w.WriteMsg(m)
}

// addrRRs returns the A (qtype A) or AAAA records of name for addrs.
func addrRRs(name string, addrs []netip.Addr, qtype uint16) []dns.RR {
	var out []dns.RR
	for _, ip := range addrs {
		switch {
		case qtype == dns.TypeA && ip.Is4():
			out = append(out, &dns.A{Hdr: header(name, dns.TypeA), A: ip.AsSlice()})
		case qtype == dns.TypeAAAA && !ip.Is4():
			out = append(out, &dns.AAAA{Hdr: header(name, dns.TypeAAAA), AAAA: ip.AsSlice()})
		}
	}
	return out
}

func header(name string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: 0}
}

// soa is the zone's SOA, for the authority section of negative answers.
func soa() dns.RR {
	return &dns.SOA{Hdr: header("test.", dns.TypeSOA), Ns: "ns.test.", Mbox: "hostmaster.test.", Serial: 1,
		Refresh: 60, Retry: 60, Expire: 60, Minttl: 0}
}
