package memnet

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
)

// DNS is a resolver for Config.Resolver (and Config.LookupHost) whose records a test sets. A name without
// records does not exist (NXDOMAIN); a failing name returns its error; a hanging name answers, with a timeout,
// only when the lookup's context ends. It needs no bubble.
type DNS struct {
	mu      sync.Mutex
	hosts   map[string][]string
	srvs    map[string][]*net.SRV
	errs    map[string]error
	hang    map[string]bool
	lookups map[string]int
}

// NewDNS returns a DNS where no name exists.
func NewDNS() *DNS {
	return &DNS{hosts: map[string][]string{}, srvs: map[string][]*net.SRV{}, errs: map[string]error{},
		hang: map[string]bool{}, lookups: map[string]int{}}
}

// SetHost makes name resolve to addrs (none: an empty answer without error).
func (f *DNS) SetHost(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts[name] = addrs
	delete(f.errs, name)
	delete(f.hang, name)
}

// SetSRV makes name's SRV records recs.
func (f *DNS) SetSRV(name string, recs ...*net.SRV) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.srvs[name] = recs
	delete(f.errs, name)
}

// Remove makes name not exist.
func (f *DNS) Remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.hosts, name)
	delete(f.srvs, name)
	delete(f.errs, name)
}

// Fail makes every lookup of name return err.
func (f *DNS) Fail(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[name] = err
	delete(f.hang, name)
}

// Hang makes every lookup of name wait for its context's end.
func (f *DNS) Hang(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang[name] = true
}

// Lookups returns how many lookups name received.
func (f *DNS) Lookups(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookups[name]
}

// ask counts a lookup of name and returns its error, after waiting for ctx's end when name hangs.
func (f *DNS) ask(ctx context.Context, name string) error {
	f.mu.Lock()
	f.lookups[name]++
	hang, err := f.hang[name], f.errs[name]
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return &net.DNSError{Err: "i/o timeout", Name: name, Server: "10.96.0.10:53", IsTimeout: true}
	}
	return err
}

// LookupHost implements Config.Resolver and Config.LookupHost.
func (f *DNS) LookupHost(ctx context.Context, host string) ([]string, error) {
	if err := f.ask(ctx, host); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	addrs, ok := f.hosts[host]
	if !ok {
		return nil, NXDomain(host)
	}
	return slices.Clone(addrs), nil
}

// LookupSRV implements Config.Resolver; it wants the name as written (empty service and proto).
func (f *DNS) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	if service != "" || proto != "" {
		return "", nil, fmt.Errorf("LookupSRV(%q, %q, %q): want the name as written", service, proto, name)
	}
	if err := f.ask(ctx, name); err != nil {
		return "", nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, ok := f.srvs[name]
	if !ok {
		return "", nil, NXDomain(name)
	}
	out := make([]*net.SRV, len(recs))
	for i, r := range recs {
		c := *r
		out[i] = &c
	}
	return name, out, nil
}

// NXDomain is the resolver's error for a name that does not exist.
func NXDomain(name string) error {
	return &net.DNSError{Err: "no such host", Name: name, Server: "10.96.0.10:53", IsNotFound: true}
}
