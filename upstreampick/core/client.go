package core

import (
	"context"
	"math/rand/v2"
	"net"
	"time"
)

// This file is what a client layer (the fasthttp balancing client of package fasthttpclient, the net/http
// transport of nethttp/upstreampick) uses to send requests through an Engine: it picks an Upstream, counts the
// request, and reports each connection's outcome, which feeds the upstream's health as health dials do.

// UpstreamClient is a client layer's per-upstream state (a *fasthttp.HostClient, say), made by NewEngine's
// newClient for each new upstream. The Engine closes its idle connections when the upstream is forgotten and
// on Close.
type UpstreamClient interface {
	CloseIdleConnections()
}

// Server returns the upstream as last configured (Config.Servers, SetServers, or a discovered address with its
// scheme): its metric label and Status key.
func (u *Upstream) Server() string { return *u.name.Load() }

// Addr returns the upstream's "host:port", as written (a host name is not resolved), for a request's dial.
func (u *Upstream) Addr() string { return u.addr }

// TLS reports whether the upstream is spoken to over https.
func (u *Upstream) TLS() bool { return u.tls }

// Client returns what NewEngine's newClient made for u; nil without one.
func (u *Upstream) Client() UpstreamClient { return u.client }

// Begin counts a request sent to u: a pick (picks_total) and one more in flight, which ModeLeastPending, drains
// and Status read. Every Begin needs its End.
func (u *Upstream) Begin() {
	u.picks.Add(1)
	u.inflight.Add(1)
}

// End counts the end of a request Begin counted, once its response has been read or it failed.
func (u *Upstream) End() { u.inflight.Add(-1) }

// PickUpstream chooses the upstream for a request; nil when none is pickable. It counts nothing: the caller
// counts the request with Admit or Reject, and each upstream it sends to with Begin. It does not allocate.
func (p *Engine) PickUpstream() *Upstream { return p.pick() }

// PickOther chooses another upstream for a request that tried those in tried (the first of the same tier if
// any, else of the next tier), for a retry; nil when none is left.
func (p *Engine) PickOther(tried []*Upstream) *Upstream {
	u, _ := p.set.Load().pickOther(rand.Uint64(), tried)
	return u
}

// Admit counts a request that got an upstream (requests_total{decision="admitted"}).
func (p *Engine) Admit() { p.admitted.Add(1) }

// Reject counts a request no upstream could take (requests_total{decision="rejected"}) and asks discovery, if
// any, for a fresh answer.
func (p *Engine) Reject() {
	p.rejected.Add(1)
	p.wakeDiscovery()
}

// Connected reports a connection to u that worked (a dial, or a response received): it clears u's failures and
// makes u healthy again.
func (p *Engine) Connected(u *Upstream) { p.connected(u, 0, false) }

// Failed reports a connection to u that could not be made or broke before the response: two in a row (health
// dials included) make u unhealthy.
func (p *Engine) Failed(u *Upstream) { p.failed(u) }

// Dial opens a connection to addr with Config.Dial or its default (a net.Dialer over TCP), as health dials do.
// It reports nothing: the caller reports the outcome with Connected or Failed.
func (p *Engine) Dial(ctx context.Context, addr string) (net.Conn, error) { return p.dial(ctx, addr) }

// Timeout returns Config.Timeout: the request timeout of a client layer.
func (p *Engine) Timeout() time.Duration { return p.cfg.timeout }

// Retries returns Config.Retries as filled: how many more upstreams a request may try after its connection
// failed (0: none).
func (p *Engine) Retries() int { return p.cfg.retries }

// ConfigureClient returns Config.ConfigureClient, for the client layer to check and apply.
func (p *Engine) ConfigureClient() any { return p.cfg.configureClient }
