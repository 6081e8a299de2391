// Package core is upstreampick without a web framework or an HTTP client: the server list, DNS discovery, the
// connect-time averages and latency tiers, the immutable pick set, the health goroutine, draining, the
// metrics, the Status view, the rejection header values and the lifecycle; and Config, generic over a
// framework's request context and handler. It imports no Fiber and no fasthttp package.
//
// A client layer sends the requests through an Engine (see PickUpstream, Upstream.Begin and Engine.Connected):
// package fasthttpclient is the fasthttp one, with the balancing client and the Picker handle the Fiber
// adapters share; nethttp/upstreampick is the net/http one. Applications import an adapter, not this package:
// github.com/fiberguard/fiberguard/upstreampick for Fiber v2, github.com/fiberguard/fiberguard/v3/upstreampick
// for Fiber v3, github.com/fiberguard/fiberguard/nethttp/upstreampick for net/http.
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
)

// Engine chooses an upstream for each request and keeps the upstreams' latency, health and drain state: a
// Picker without the framework. Create it with NewEngine and stop it with Close (or Config.Context). All
// methods are safe for concurrent use.
type Engine struct {
	cfg settings

	// set is what picks read: one atomic load, no lock.
	set atomic.Pointer[pickSet[*Upstream]]
	// Written by every request, so kept apart from the fields that picks read.
	_                  [64]byte
	admitted, rejected atomic.Uint64 // requests that got an upstream, or none
	_                  [64]byte
	// newClient is NewEngine's: it makes each upstream's UpstreamClient.
	newClient func(*Engine, *Upstream) UpstreamClient

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
	ups    []*Upstream // listed upstreams (see targetsLocked), then draining ones
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

// Upstream is one server, as PickUpstream gives it to a client layer.
type Upstream struct {
	key  string // target.key: the same server however it is spelt
	host string // for name resolution
	// literal tells that host is an IP address, which needs no resolution.
	literal bool
	port    string
	addr    string // host:port
	tls     bool
	client  UpstreamClient

	// name is the server as last configured (SetServers may respell it): the metric label and status key.
	name atomic.Pointer[string]
	// source is the Discover target that lists it; "" for a static server. Guarded by Engine.mu.
	source string

	picks     atomic.Uint64
	inflight  atomic.Int64 // requests between Begin and End
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
	configureClient                                      any
	name                                                 string
	context                                              context.Context
}

// NewEngine creates an Engine over cfg.Servers and the addresses of cfg.Discover, and starts its health checks;
// the first round starts at once and NewEngine does not wait for it. With cfg.Discover, NewEngine first resolves
// every name at once and waits for the answers, each bounded by half its interval. Until an upstream's first
// dial completes it is picked like a member of the nearest tier. It reads only cfg's framework-free fields;
// cfg must have been filled (WithDefaults), and NewEngine panics, naming the field, when one is invalid.
// logger receives warnings (nil: the log package). newClient, when not nil, makes the client layer's state of
// each new upstream (see UpstreamClient); it may keep the Engine it is given but must not call its methods
// before NewEngine has returned.
func NewEngine[C, H any](cfg Config[C, H], logger Logger, newClient func(*Engine, *Upstream) UpstreamClient) *Engine {
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
		newClient:  newClient,
		retryAfter: retryAfterHeader(cfg.RetryAfter),
		rejectedBy: []byte("upstreampick/" + cfg.Name),
		lookup:     cfg.LookupHost,
		dial:       cfg.Dial,
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
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

	old := make(map[string]*Upstream, len(p.ups))
	for _, u := range p.ups {
		old[u.key] = u
	}
	ups := make([]*Upstream, 0, len(targets)+len(p.ups))
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
	return u.Server(), true
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
		ups := append([]*Upstream(nil), p.ups...)
		p.mu.Unlock()
		for _, u := range ups {
			u.closeIdle()
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
	set := &pickSet[*Upstream]{mode: p.cfg.mode, ladder: make([][]*Upstream, len(levels))}
	for l, idx := range levels {
		set.ladder[l] = make([]*Upstream, len(idx))
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

func pendingRequests(u *Upstream) int { return int(u.inflight.Load()) }

// pick chooses an upstream; nil when none is pickable.
func (p *Engine) pick() *Upstream {
	u, _ := p.set.Load().pick(rand.Uint64(), pendingRequests)
	return u
}

// newUpstream builds an upstream and its client layer's state.
func (p *Engine) newUpstream(t target) *Upstream {
	_, err := netip.ParseAddr(t.host)
	u := &Upstream{
		key: t.key, host: t.host, literal: err == nil, port: t.port, addr: net.JoinHostPort(t.host, t.port),
		tls: t.tls, tier: noTier,
	}
	u.name.Store(&t.server)
	if p.newClient != nil {
		u.client = p.newClient(p, u)
	}
	return u
}

// closeIdle closes the idle connections of u's client layer, if any.
func (u *Upstream) closeIdle() {
	if u.client != nil {
		u.client.CloseIdleConnections()
	}
}

// reapLocked forgets draining upstreams that have no request in flight or whose drain timed out. p.mu must be
// held.
func (p *Engine) reapLocked(now time.Time) {
	kept := p.ups[:0]
	changed := false
	for _, u := range p.ups {
		if u.draining && (u.inflight.Load() == 0 || !now.Before(u.drainUntil)) {
			u.removed = true
			u.closeIdle()
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
