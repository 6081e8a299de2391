// Package upstreampick sends each proxied request to one of the nearest healthy upstreams, for Fiber's
// proxy.Balancer or as a Fiber handler of its own.
//
// A health goroutine dials every upstream once per interval and keeps an exponentially weighted average of its
// TCP connect time. Upstreams are grouped into latency tiers; a request goes to an upstream picked at random
// among the healthy ones of the nearest tier, so traffic stays in the nearest site and spreads evenly inside it.
// An upstream that fails to connect twice in a row (health dial or proxied request) gets no traffic until a
// connection to it succeeds again.
package upstreampick

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// ErrNoUpstream is returned when no upstream can take a request: every one is unhealthy or draining. It is a
// *fiber.Error with status 503, so Fiber's error handler answers 503 Service Unavailable at once, through
// proxy.Balancer as well as through Handler.
var ErrNoUpstream = &fiber.Error{Code: fiber.StatusServiceUnavailable, Message: "upstreampick: no upstream available"}

// unhealthyAfter is the number of consecutive connection failures that make an upstream unhealthy.
const unhealthyAfter = 2

// Picker chooses an upstream for each request and keeps the upstreams' latency, health and drain state. Create
// it with New and stop it with Close. All methods are safe for concurrent use.
type Picker struct {
	cfg Config

	// set is what picks read: one atomic load, no lock.
	set atomic.Pointer[pickSet[*upstream]]
	bal *balancer
	lbc *fasthttp.LBClient

	mu    sync.Mutex
	ups   []*upstream // configured upstreams in configuration order, then draining ones
	tiers tierBuilder

	metrics *collector

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// upstream is one server.
type upstream struct {
	key  string // target.key: the same server however it is spelt
	host string // for name resolution
	port string
	tls  bool
	hc   *fasthttp.HostClient

	// name is the server as last configured (SetServers may respell it): the metric label and status key.
	name atomic.Pointer[string]

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

// New creates a Picker over cfg.Servers and starts its health checks; the first round starts at once. Until an
// upstream's first dial completes it is picked like a member of the nearest tier. New panics, naming the field,
// when the config is invalid.
func New(config ...Config) *Picker {
	cfg := configDefault(config...)
	ctx, cancel := context.WithCancel(context.Background())
	p := &Picker{cfg: cfg, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	p.bal = &balancer{p: p}
	p.lbc = &fasthttp.LBClient{
		Clients: []fasthttp.BalancingClient{p.bal},
		Timeout: cfg.Timeout,
		// Health is the picker's business; with one client, LBClient's penalty would only start timers.
		HealthCheck: func(*fasthttp.Request, *fasthttp.Response, error) bool { return true },
	}

	targets, _ := parseServers(cfg.Servers) // checked by configDefault
	p.mu.Lock()
	for _, t := range targets {
		p.ups = append(p.ups, p.newUpstream(t))
	}
	p.rebuildLocked()
	p.mu.Unlock()

	if !cfg.DisableMetrics {
		p.metrics = registerCollector(p, cfg.Registerer, cfg.Name)
	}
	go p.run()
	return p
}

// LBClient returns the client to pass to proxy.Balancer:
//
//	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))
//
// It holds a single fasthttp.BalancingClient that picks the upstream itself, so LBClient's own least-loaded
// choice and failure penalty play no part. Its Timeout is Config.Timeout. Every call returns the same client.
func (p *Picker) LBClient() *fasthttp.LBClient { return p.lbc }

// BalancingClient returns the picker as a fasthttp.BalancingClient, for an LBClient of your own.
func (p *Picker) BalancingClient() fasthttp.BalancingClient { return p.bal }

// Handler returns a fiber.Handler that proxies the request to a picked upstream, for apps that need none of
// proxy.Balancer's options. It answers 503 (ErrNoUpstream) when no upstream is pickable, 504
// (fiber.ErrGatewayTimeout) when the upstream did not answer within Config.Timeout and 502
// (fiber.ErrBadGateway) on any other upstream failure; each goes through the app's ErrorHandler.
func (p *Picker) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if p.cfg.Next != nil && p.cfg.Next(c) {
			return c.Next()
		}
		req, res := c.Request(), c.Response()
		req.Header.Del(fiber.HeaderConnection)
		err := p.bal.DoDeadline(req, res, time.Now().Add(p.cfg.Timeout))
		res.Header.Del(fiber.HeaderConnection)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrNoUpstream):
			return ErrNoUpstream
		case errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout):
			return fiber.ErrGatewayTimeout
		}
		return fiber.ErrBadGateway
	}
}

// SetServers replaces the upstream list. New servers start unmeasured and pickable; kept servers keep their
// state (a server is matched by scheme, host and port, so "127.0.0.1:80" keeps the state of "http://127.0.0.1"
// and takes the new spelling as its name); removed servers drain: they get no new requests and are forgotten (with their metrics) once their
// requests in flight have finished or Config.DrainTimeout has passed, checked every HealthInterval. Listing a
// draining server again aborts its drain. An invalid list is rejected as a whole with an error.
func (p *Picker) SetServers(servers []string) error {
	if len(servers) == 0 {
		return errors.New("upstreampick: SetServers needs at least one server")
	}
	targets, err := parseServers(servers)
	if err != nil {
		return errors.New("upstreampick: SetServers: " + err.Error())
	}
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		seen[t.key] = true
	}

	p.mu.Lock()
	defer p.mu.Unlock()
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
		u.draining = false
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
	return nil
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

// Status is a snapshot of a Picker's state, for status pages.
type Status struct {
	Mode      string           `json:"mode"`
	Upstreams []UpstreamStatus `json:"upstreams"`
}

// UpstreamStatus is one upstream's state.
type UpstreamStatus struct {
	Server string `json:"server"`
	// RTT is the connect-time average; 0 until Sampled.
	RTT       time.Duration `json:"-"`
	RTTMillis float64       `json:"rtt_ms"`
	Sampled   bool          `json:"sampled"`
	// Tier is the latency tier, 0 being the nearest; -1 until Sampled.
	Tier     int    `json:"tier"`
	Healthy  bool   `json:"healthy"`
	Draining bool   `json:"draining"`
	InFlight int    `json:"in_flight"`
	Picks    uint64 `json:"picks"`
	// Active reports whether new requests currently go to this upstream.
	Active bool `json:"active"`
}

// Status returns a snapshot of every upstream, configured ones in configuration order, then draining ones.
func (p *Picker) Status() Status {
	active := map[*upstream]bool{}
	for _, u := range p.set.Load().items {
		active[u] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Mode: p.cfg.Mode.String(), Upstreams: make([]UpstreamStatus, 0, len(p.ups))}
	for _, u := range p.ups {
		st.Upstreams = append(st.Upstreams, UpstreamStatus{
			Server:    *u.name.Load(),
			RTT:       u.rtt.avg,
			RTTMillis: float64(u.rtt.avg) / float64(time.Millisecond),
			Sampled:   u.rtt.sampled,
			Tier:      u.tier,
			Healthy:   !u.unhealthy.Load(),
			Draining:  u.draining,
			InFlight:  u.hc.PendingRequests(),
			Picks:     u.picks.Load(),
			Active:    active[u],
		})
	}
	return st
}

// Close stops the health checks, waits for the health goroutine to end, unregisters the metrics and closes
// idle upstream connections. Requests still go to the last pickable set afterwards. Close is idempotent and
// returns nil.
func (p *Picker) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		<-p.done
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
}

// failure records a connection failure; the second in a row makes u unhealthy.
func (p *Picker) failure(u *upstream) {
	if u.fails.Add(1) >= unhealthyAfter && u.unhealthy.CompareAndSwap(false, true) {
		p.mu.Lock()
		p.rebuildLocked()
		p.mu.Unlock()
	}
}

// success records a successful connection; it makes u healthy again.
func (p *Picker) success(u *upstream) {
	if u.fails.Load() != 0 {
		u.fails.Store(0)
	}
	if u.unhealthy.Load() && u.unhealthy.CompareAndSwap(true, false) {
		p.mu.Lock()
		p.rebuildLocked()
		p.mu.Unlock()
	}
}

// balancer is the fasthttp.BalancingClient behind LBClient.
type balancer struct {
	p       *Picker
	pending atomic.Int64
}

func pendingRequests(u *upstream) int { return u.hc.PendingRequests() }

// pick chooses an upstream; nil when none is pickable.
func (p *Picker) pick() *upstream {
	u, _ := p.set.Load().pick(rand.Uint64(), pendingRequests)
	return u
}

// DoDeadline sends req to a picked upstream. When the connection cannot be established (nothing was sent), or
// an idempotent request's connection broke before the response, it tries another upstream — of the same tier
// if there is one, else of the next — up to Config.Retries times. It returns ErrNoUpstream when nothing is
// pickable. A response counts as a success of its upstream; a failed dial or a broken connection as a failure.
func (b *balancer) DoDeadline(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	b.pending.Add(1)
	defer b.pending.Add(-1)
	u := b.p.pick()
	if u == nil {
		return ErrNoUpstream
	}
	err := b.send(u, req, resp, deadline)
	if err == nil || !retryable(err, req) || b.p.cfg.Retries == 0 {
		return err
	}
	return b.retry(u, err, req, resp, deadline)
}

// retry sends req to upstreams not tried yet after first failed with err; it returns the last error when
// the retries, the deadline or the upstreams run out.
func (b *balancer) retry(first *upstream, err error, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	tried := []*upstream{first}
	for range b.p.cfg.Retries {
		if !time.Now().Before(deadline) {
			return err
		}
		u, ok := b.p.set.Load().pickOther(rand.Uint64(), tried)
		if !ok {
			return err
		}
		tried = append(tried, u)
		if err = b.send(u, req, resp, deadline); err == nil || !retryable(err, req) {
			return err
		}
	}
	return err
}

// send sends req to u and records the outcome in u's health.
func (b *balancer) send(u *upstream, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	u.picks.Add(1)
	if uri := req.URI(); u.tls != (string(uri.Scheme()) == "https") {
		if u.tls {
			uri.SetScheme("https")
		} else {
			uri.SetScheme("http")
		}
	}
	err := u.hc.DoDeadline(req, resp, deadline)
	switch {
	case err == nil:
		b.p.success(u)
	case connectionLost(err):
		b.p.failure(u) // a failed dial was counted by the dialer
	}
	return err
}

// retryable reports whether req may go to another upstream after err: the connection could not be made
// (nothing was sent), or it broke before the response and the request is idempotent (fasthttp has retried it
// on the same upstream already).
func retryable(err error, req *fasthttp.Request) bool {
	var de *dialError
	if errors.As(err, &de) {
		return true
	}
	return connectionLost(err) && !req.IsBodyStream() && idempotent(req)
}

// connectionLost reports whether err means the upstream's connection broke (as opposed to a timeout or a local
// limit): it counts towards marking the upstream unhealthy.
func connectionLost(err error) bool {
	return errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// idempotent reports whether the request's method is idempotent (RFC 9110, 9.2.2).
func idempotent(req *fasthttp.Request) bool {
	h := &req.Header
	return h.IsGet() || h.IsHead() || h.IsPut() || h.IsDelete() || h.IsOptions() || h.IsTrace()
}

// PendingRequests returns the number of requests in flight through the picker.
func (b *balancer) PendingRequests() int { return int(b.pending.Load()) }

// dialError marks a failure to connect to an upstream: the request was not sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// newUpstream builds an upstream and its HostClient, whose dials report to the health state.
func (p *Picker) newUpstream(t target) *upstream {
	u := &upstream{key: t.key, host: t.host, port: t.port, tls: t.tls, tier: noTier}
	u.name.Store(&t.server)
	hc := &fasthttp.HostClient{
		Addr:                     net.JoinHostPort(t.host, t.port),
		IsTLS:                    t.tls,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	if p.cfg.ConfigureClient != nil {
		p.cfg.ConfigureClient(t.server, hc)
		hc.Addr, hc.IsTLS = net.JoinHostPort(t.host, t.port), t.tls
	}
	dialTimeout, dial := hc.DialTimeout, hc.Dial
	hc.Dial = nil
	hc.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
		var (
			conn net.Conn
			err  error
		)
		switch {
		case dialTimeout != nil:
			conn, err = dialTimeout(addr, timeout)
		case dial != nil:
			conn, err = dial(addr)
		default:
			if timeout <= 0 {
				timeout = fasthttp.DefaultDialTimeout
			}
			// A plain net.Dialer: fasthttp's default dialer starts a process-wide goroutine that never ends.
			d := net.Dialer{Timeout: timeout}
			conn, err = d.Dial("tcp", addr)
		}
		if err != nil {
			p.failure(u)
			return nil, &dialError{err: err}
		}
		p.success(u)
		return conn, nil
	}
	u.hc = hc
	return u
}
