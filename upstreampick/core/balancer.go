package core

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// balancer is the fasthttp.BalancingClient behind LBClient and Handler.
type balancer struct {
	p *Engine
	// Written by every request, so kept off the Engine's fields that picks read.
	pending            atomic.Int64
	admitted, rejected atomic.Uint64 // requests that got an upstream, or none
}

// DoDeadline sends req to a picked upstream. When the connection cannot be established (nothing was sent), or
// an idempotent request's connection broke before the response, it tries another upstream — of the same tier
// if there is one, else of the next — up to Config.Retries times. It returns NewEngine's noUpstream when
// nothing is pickable, and counts the request as rejected. A response counts as a success of its upstream; a
// failed dial or a broken connection as a failure.
func (b *balancer) DoDeadline(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	b.pending.Add(1)
	defer b.pending.Add(-1)
	u := b.p.pick()
	if u == nil {
		b.rejected.Add(1)
		req.SetUserValue(b, rejectedMark{})
		b.p.wakeDiscovery()
		return b.p.noUpstream
	}
	b.admitted.Add(1)
	err := b.send(u, req, resp, deadline)
	if err == nil || !retryable(err, req) || b.p.cfg.retries == 0 {
		return err
	}
	return b.retry(u, err, req, resp, deadline)
}

// retry sends req to upstreams not tried yet after first failed with err; it returns the last error when
// the retries, the deadline or the upstreams run out.
func (b *balancer) retry(first *upstream, err error, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	tried := []*upstream{first}
	for range b.p.cfg.retries {
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
		b.p.connected(u, 0, false)
	case connectionLost(err):
		b.p.failed(u) // a failed dial was counted by the dialer
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

// rejectedMark, stored in a request's user values under its balancer, says that the balancer counted the
// request as rejected, so that Engine.SetRejectHeaders does not count it again. The request's reset clears it.
type rejectedMark struct{}

// countRejected counts req as rejected unless b already did.
func (b *balancer) countRejected(req *fasthttp.Request) {
	if req.UserValue(b) != nil {
		return
	}
	b.rejected.Add(1)
	req.SetUserValue(b, rejectedMark{})
}

// PendingRequests returns the number of requests in flight through the picker.
func (b *balancer) PendingRequests() int { return int(b.pending.Load()) }

// dialError marks a failure to connect to an upstream: the request was not sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// newHostClient builds u's HostClient, whose dials report to u's health.
func (p *Engine) newHostClient(u *upstream, t target) *fasthttp.HostClient {
	hc := &fasthttp.HostClient{
		Addr:                     net.JoinHostPort(t.host, t.port),
		IsTLS:                    t.tls,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	if p.cfg.configureClient != nil {
		p.cfg.configureClient(t.server, hc)
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
			// Not bound to Close: requests are answered after it too.
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			conn, err = p.dial(ctx, addr)
			cancel()
		}
		if err != nil {
			p.failed(u)
			return nil, &dialError{err: err}
		}
		p.connected(u, 0, false)
		return conn, nil
	}
	return hc
}
