// Package core is upstreampick without a web framework: the server list, DNS discovery, the connect-time
// averages and latency tiers, the immutable pick set, the health goroutine, draining, the fasthttp balancing
// client with its retries, the metrics, the Status view, the rejection headers and the lifecycle. It imports no
// Fiber package.
//
// It also holds the Fiber glue once for both Fiber versions: Config, generic over the request context and the
// handler, and Picker, the handle whose Handler and Reject take that context. Applications import an adapter,
// not this package: github.com/fiberguard/fiberguard/upstreampick for Fiber v2 or
// github.com/fiberguard/fiberguard/v3/upstreampick for Fiber v3. An adapter instantiates Config and Picker with
// its Fiber version's types and passes in what its version spells differently (its errors and its logger).
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

// Engine chooses an upstream for each request and keeps the upstreams' latency, health and drain state: a
// Picker without the framework. Create it with NewEngine and stop it with Close (or Config.Context). All
// methods are safe for concurrent use.
type Engine struct {
	cfg settings
	// noUpstream is what LBClient returns when nothing is pickable: NewEngine's argument or its default.
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

	// resolver is Config.Resolver or its default; sources are Config.Discover's names (fixed after NewEngine).
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
	// source is the Discover target that lists it; "" for a static server. Guarded by Engine.mu.
	source string

	picks     atomic.Uint64
	fails     atomic.Int32 // consecutive connection failures
	unhealthy atomic.Bool

	// Guarded by Engine.mu.
	rtt        ewma
	tier       int
	group      uint64
	draining   bool
	drainUntil time.Time
	removed    bool
}

// settings are the fields of a Config an Engine reads after NewEngine.
type settings struct {
	mode                                                 Mode
	healthInterval, healthTimeout, drainTimeout, timeout time.Duration
	retries                                              int
	configureClient                                      func(server string, c *fasthttp.HostClient)
	name                                                 string
	context                                              context.Context
}

// errNoUpstream is NewEngine's default noUpstream.
var errNoUpstream = errors.New("upstreampick: no upstream available")

// NewEngine creates an Engine over cfg.Servers and the addresses of cfg.Discover, and starts its health checks;
// the first round starts at once and NewEngine does not wait for it. With cfg.Discover, NewEngine first resolves
// every name at once and waits for the answers, each bounded by half its interval. Until an upstream's first
// dial completes it is picked like a member of the nearest tier. It reads only cfg's framework-free fields;
// cfg must have been filled (WithDefaults), and NewEngine panics, naming the field, when one is invalid.
// noUpstream is the error LBClient and BalancingClient return when no upstream can take a request (the
// adapter's ErrNoUpstream; nil: an error of the same text); logger receives warnings (nil: the log package).
func NewEngine[C, H any](cfg Config[C, H], logger Logger, noUpstream error) *Engine {
	cfg.validateSettings()
	parent := cfg.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	p := &Engine{
		cfg: settings{
			mode:            cfg.Mode,
			healthInterval:  cfg.HealthInterval,
			healthTimeout:   cfg.HealthTimeout,
			drainTimeout:    cfg.DrainTimeout,
			timeout:         cfg.Timeout,
			retries:         cfg.Retries,
			configureClient: cfg.ConfigureClient,
			name:            cfg.Name,
			context:         cfg.Context,
		},
		noUpstream: noUpstream,
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
	p.warnf = log.Printf
	if logger != nil {
		p.warnf = logger.Warnf
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

// LBClient is Picker.LBClient; with no upstream pickable it returns NewEngine's noUpstream.
func (p *Engine) LBClient() *fasthttp.LBClient { return p.lbc }

// BalancingClient is Picker.BalancingClient.
func (p *Engine) BalancingClient() fasthttp.BalancingClient { return p.bal }

// SetServers is Picker.SetServers: the one way the static servers change after NewEngine.
func (p *Engine) SetServers(servers []string) error {
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
// every change, from NewEngine, SetServers and discovery. Kept upstreams keep their state, new ones start
// unmeasured, and upstreams no longer listed drain; a draining upstream listed again stops draining. p.mu must
// be held.
func (p *Engine) setTargetsLocked(targets []target) {
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
	deadline := time.Now().Add(p.cfg.drainTimeout)
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

// Pick is Picker.Pick. It does not allocate.
func (p *Engine) Pick() (server string, ok bool) {
	u := p.pick()
	if u == nil {
		return "", false
	}
	u.picks.Add(1)
	return *u.name.Load(), true
}

// Close is Picker.Close.
func (p *Engine) Close() error {
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
func (p *Engine) rebuildLocked() {
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
	levels := ladder(cs, p.cfg.mode)
	set := &pickSet[*upstream]{mode: p.cfg.mode, ladder: make([][]*upstream, len(levels))}
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
func (p *Engine) pick() *upstream {
	u, _ := p.set.Load().pick(rand.Uint64(), pendingRequests)
	return u
}

// newUpstream builds an upstream and its HostClient.
func (p *Engine) newUpstream(t target) *upstream {
	_, err := netip.ParseAddr(t.host)
	u := &upstream{key: t.key, host: t.host, literal: err == nil, port: t.port, tls: t.tls, tier: noTier}
	u.name.Store(&t.server)
	u.hc = p.newHostClient(u, t)
	return u
}

// reapLocked forgets draining upstreams that have no request in flight or whose drain timed out. p.mu must be
// held.
func (p *Engine) reapLocked(now time.Time) {
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
