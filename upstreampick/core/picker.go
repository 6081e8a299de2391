// Package core is upstreampick without a web framework: the server list, DNS discovery, the connect-time
// averages and latency tiers, the immutable pick set, the health goroutine, draining, the fasthttp balancing
// client with its retries, the metrics, the Status view, the rejection headers and the lifecycle. It imports no
// Fiber package.
//
// Applications import an adapter, not this package: github.com/fiberguard/fiberguard/upstreampick for Fiber v2
// or github.com/fiberguard/fiberguard/v3/upstreampick for Fiber v3. An adapter fills a Config (Config.Fill),
// creates a Picker (New), proxies with Picker.Proxy and answers a rejection after Picker.Reject.
package core

import (
	"context"
	"errors"
	"log"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Picker chooses an upstream for each request and keeps the upstreams' latency, health and drain state. Create
// it with New and stop it with Close (or Config.Context). All methods are safe for concurrent use.
type Picker struct {
	cfg Config
	// noUpstream is Config.NoUpstream or its default.
	noUpstream error

	// set is what picks read: one atomic load, no lock.
	set atomic.Pointer[pickSet[*upstream]]
	bal *balancer
	lbc *fasthttp.LBClient

	// The rejection headers, built once.
	retryAfter, rejectedBy []byte

	// lookup and dial are Config.LookupHost and Config.Dial or their defaults; kernelRTT tells that dial is
	// the default, whose connections the kernel timed.
	lookup    func(ctx context.Context, host string) ([]string, error)
	dial      func(ctx context.Context, addr string) (net.Conn, error)
	kernelRTT bool

	// resolver is Config.Resolver or its default; sources are Config.Discover's names (fixed after New).
	resolver Resolver
	sources  []*source
	warnf    func(format string, v ...any)

	mu sync.Mutex
	// static is the list of Config.Servers, then of SetServers.
	static []target
	ups    []*upstream // listed upstreams (see targetsLocked), then draining ones
	tiers  tierBuilder
	// updated is when the last health round ended; nil before the first.
	updated *time.Time

	metrics *collector

	ctx    context.Context
	cancel context.CancelFunc
	// done is closed when the health goroutine ends; discovering counts the discovery goroutines.
	done        chan struct{}
	discovering sync.WaitGroup
	closeOnce   sync.Once
}

// upstream is one server.
type upstream struct {
	key  string // target.key: the same server however it is spelt
	host string // for name resolution
	// literal tells that host is an IP address, which needs no resolution.
	literal bool
	port    string
	tls     bool
	hc      *fasthttp.HostClient

	// name is the server as last configured (SetServers may respell it): the metric label and status key.
	name atomic.Pointer[string]
	// source is the Discover target that lists it; "" for a static server. Guarded by Picker.mu.
	source string

	picks     atomic.Uint64
	fails     atomic.Int32 // consecutive connection failures
	unhealthy atomic.Bool

	// Guarded by Picker.mu.
	rtt        ewma
	tier       int
	group      uint64
	draining   bool
	drainUntil time.Time
	removed    bool
}

// errNoUpstream is the default Config.NoUpstream.
var errNoUpstream = errors.New("upstreampick: no upstream available")

// New creates a Picker over cfg.Servers and the addresses of cfg.Discover, and starts its health checks; the
// first round starts at once and New does not wait for it. With cfg.Discover, New first resolves every name at
// once and waits for the answers, each bounded by half its interval. Until an upstream's first dial completes
// it is picked like a member of the nearest tier. cfg must have been filled (Fill); New panics, naming the
// field, when it is invalid.
func New(cfg Config) *Picker {
	cfg.Validate()
	parent := cfg.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	p := &Picker{
		cfg:        cfg,
		noUpstream: cfg.NoUpstream,
		retryAfter: retryAfterHeader(cfg.RetryAfter),
		rejectedBy: []byte("upstreampick/" + cfg.Name),
		lookup:     cfg.LookupHost,
		dial:       cfg.Dial,
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
	}
	if p.noUpstream == nil {
		p.noUpstream = errNoUpstream
	}
	if p.lookup == nil {
		p.lookup = net.DefaultResolver.LookupHost
	}
	if p.dial == nil {
		p.dial, p.kernelRTT = dialTCP, true
	}
	p.resolver = cfg.Resolver
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	p.warnf = cfg.Warnf
	if p.warnf == nil {
		p.warnf = log.Printf
	}
	p.sources = newSources(cfg.Discover)
	p.bal = &balancer{p: p}
	p.lbc = &fasthttp.LBClient{
		Clients: []fasthttp.BalancingClient{p.bal},
		Timeout: cfg.Timeout,
		// Health is the picker's business; with one client, LBClient's penalty would only start timers.
		HealthCheck: func(*fasthttp.Request, *fasthttp.Response, error) bool { return true },
	}

	p.static, _ = parseServers(cfg.Servers) // checked by Validate
	p.resolveFirst()
	p.mu.Lock()
	p.setTargetsLocked(p.targetsLocked())
	p.mu.Unlock()

	if !cfg.DisableMetrics {
		reg := cfg.Registerer
		if reg == nil {
			reg = prometheus.DefaultRegisterer
		}
		p.metrics = registerCollector(p, reg, cfg.Name, p.warnf)
	}
	go p.run()
	for _, s := range p.sources {
		p.discovering.Add(1)
		go p.discover(s)
	}
	return p
}

// LBClient returns the client to pass to proxy.Balancer:
//
//	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))
//
// It holds a single fasthttp.BalancingClient that picks the upstream itself, so LBClient's own least-loaded
// choice and failure penalty play no part. Its Timeout is Config.Timeout. Every call returns the same client.
// When no upstream can take a request it returns Config.NoUpstream.
func (p *Picker) LBClient() *fasthttp.LBClient { return p.lbc }

// BalancingClient returns the picker as a fasthttp.BalancingClient, for an LBClient of your own.
func (p *Picker) BalancingClient() fasthttp.BalancingClient { return p.bal }

// SetServers replaces the upstream list; with Config.Discover it replaces the static part only (what
// Config.Servers listed): discovered upstreams stay, and an empty list, allowed then, leaves only them. It is
// the one way the static servers change after New. New servers start unmeasured and pickable; kept servers
// keep their state (a server is matched by scheme, host and port, so "127.0.0.1:80" keeps the state of
// "http://127.0.0.1" and takes the new spelling as its name; so is a discovered address listed here too);
// removed servers drain: they get no new requests and are forgotten (with their metrics) once their requests
// in flight have finished or Config.DrainTimeout has passed, checked every HealthInterval. Listing a draining
// server again aborts its drain. An invalid list is rejected as a whole with an error.
func (p *Picker) SetServers(servers []string) error {
	if len(servers) == 0 && len(p.sources) == 0 {
		return errors.New("upstreampick: SetServers needs at least one server")
	}
	targets, err := parseServers(servers)
	if err != nil {
		return errors.New("upstreampick: SetServers: " + err.Error())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.static = targets
	p.setTargetsLocked(p.targetsLocked())
	return nil
}

// setTargetsLocked makes targets (parsed, without duplicates) the upstream list: the single entry point of
// every change, from New, SetServers and discovery. Kept upstreams keep their state, new ones start
// unmeasured, and upstreams no longer listed drain; a draining upstream listed again stops draining. p.mu must
// be held.
func (p *Picker) setTargetsLocked(targets []target) {
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		seen[t.key] = true
	}

	old := make(map[string]*upstream, len(p.ups))
	for _, u := range p.ups {
		old[u.key] = u
	}
	ups := make([]*upstream, 0, len(targets)+len(p.ups))
	for _, t := range targets {
		u := old[t.key]
		if u == nil {
			u = p.newUpstream(t)
		} else if *u.name.Load() != t.server {
			u.name.Store(&t.server)
		}
		u.draining, u.source = false, t.source
		ups = append(ups, u)
	}
	deadline := time.Now().Add(p.cfg.DrainTimeout)
	for _, u := range p.ups {
		if seen[u.key] {
			continue
		}
		if !u.draining {
			u.draining, u.drainUntil = true, deadline
		}
		ups = append(ups, u)
	}
	p.ups = ups
	p.rebuildLocked()
}

// Pick chooses an upstream for a request the caller sends itself, and counts it as a pick. It returns the
// server as configured, or false when no upstream is pickable. It does not allocate.
func (p *Picker) Pick() (server string, ok bool) {
	u := p.pick()
	if u == nil {
		return "", false
	}
	u.picks.Add(1)
	return *u.name.Load(), true
}

// Close stops the health checks and the resolutions of Config.Discover, waits for their goroutines to end,
// unregisters the metrics and closes idle upstream connections; Config.Context being done does the same.
// Requests, even concurrent ones, are still answered afterwards, through the last pickable set. Close is
// idempotent and returns nil.
func (p *Picker) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		<-p.done
		p.discovering.Wait()
		if p.metrics != nil {
			p.metrics.unregister()
		}
		p.mu.Lock()
		ups := append([]*upstream(nil), p.ups...)
		p.mu.Unlock()
		for _, u := range ups {
			u.hc.CloseIdleConnections()
		}
	})
	return nil
}

// rebuildLocked rebuilds the tiers and publishes a new pick set. p.mu must be held.
func (p *Picker) rebuildLocked() {
	n := len(p.ups)
	ms := make([]tierMember, n)
	tier := make([]int, n)
	group := make([]uint64, n)
	for i, u := range p.ups {
		ms[i] = tierMember{avg: u.rtt.avg, sampled: u.rtt.sampled, group: u.group}
	}
	p.tiers.build(ms, tier, group)
	cs := make([]candidate, n)
	for i, u := range p.ups {
		u.tier, u.group = tier[i], group[i]
		cs[i] = candidate{tier: tier[i], healthy: !u.unhealthy.Load(), draining: u.draining}
	}
	levels := ladder(cs, p.cfg.Mode)
	set := &pickSet[*upstream]{mode: p.cfg.Mode, ladder: make([][]*upstream, len(levels))}
	for l, idx := range levels {
		set.ladder[l] = make([]*upstream, len(idx))
		for k, i := range idx {
			set.ladder[l][k] = p.ups[i]
		}
	}
	set.items = set.ladder[0]
	p.set.Store(set)
	if len(set.items) == 0 {
		p.wakeDiscovery()
	}
}

func pendingRequests(u *upstream) int { return u.hc.PendingRequests() }

// pick chooses an upstream; nil when none is pickable.
func (p *Picker) pick() *upstream {
	u, _ := p.set.Load().pick(rand.Uint64(), pendingRequests)
	return u
}

// newUpstream builds an upstream and its HostClient.
func (p *Picker) newUpstream(t target) *upstream {
	_, err := netip.ParseAddr(t.host)
	u := &upstream{key: t.key, host: t.host, literal: err == nil, port: t.port, tls: t.tls, tier: noTier}
	u.name.Store(&t.server)
	u.hc = p.newHostClient(u, t)
	return u
}

// reapLocked forgets draining upstreams that have no request in flight or whose drain timed out. p.mu must be
// held.
func (p *Picker) reapLocked(now time.Time) {
	kept := p.ups[:0]
	changed := false
	for _, u := range p.ups {
		if u.draining && (u.hc.PendingRequests() == 0 || !now.Before(u.drainUntil)) {
			u.removed = true
			u.hc.CloseIdleConnections()
			changed = true
			continue
		}
		kept = append(kept, u)
	}
	for i := len(kept); i < len(p.ups); i++ {
		p.ups[i] = nil
	}
	p.ups = kept
	if changed {
		p.rebuildLocked()
	}
}
