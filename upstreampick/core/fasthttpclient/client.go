// Package fasthttpclient is the fasthttp client layer of upstreampick's core: the balancing client that sends
// each request to the upstream an Engine picks (Client, for fasthttp.LBClient and Fiber's proxy.Balancer), its
// HostClient per upstream, Proxy, the rejection headers on a fasthttp response, and Picker, the handle the Fiber
// adapters share (generic over the Fiber version's request context and handler).
//
// It is apart from package core so that core, which everything else needs, compiles without fasthttp: the
// net/http adapter imports core only. Applications import a Fiber adapter, not this package.
package fasthttpclient

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/valyala/fasthttp"
)

// Client is a fasthttp.BalancingClient over an Engine: each request goes to the upstream the Engine picks,
// through that upstream's HostClient (see NewHostClient).
type Client struct {
	e *core.Engine
	// noUpstream is what DoDeadline returns when nothing is pickable.
	noUpstream error
	lbc        *fasthttp.LBClient
	// Written by every request, so kept off the fields above, which every request reads.
	_       [64]byte
	pending atomic.Int64
}

// ErrNoUpstream is New's default noUpstream.
var ErrNoUpstream = errors.New("upstreampick: no upstream available")

// New returns the Client over e, whose upstreams must have been made by NewHostClient. noUpstream is what
// DoDeadline returns when no upstream can take a request (the adapter's ErrNoUpstream; nil: ErrNoUpstream).
func New(e *core.Engine, noUpstream error) *Client {
	if noUpstream == nil {
		noUpstream = ErrNoUpstream
	}
	c := &Client{e: e, noUpstream: noUpstream}
	c.lbc = &fasthttp.LBClient{
		Clients: []fasthttp.BalancingClient{c},
		Timeout: e.Timeout(),
		// Health is the picker's business; with one client, LBClient's penalty would only start timers.
		HealthCheck: func(*fasthttp.Request, *fasthttp.Response, error) bool { return true },
	}
	return c
}

// LBClient returns the fasthttp.LBClient holding c alone, with Config.Timeout. Every call returns the same one.
func (c *Client) LBClient() *fasthttp.LBClient { return c.lbc }

// DoDeadline sends req to a picked upstream. When the connection cannot be established (nothing was sent), or
// an idempotent request's connection broke before the response, it tries another upstream — of the same tier
// if there is one, else of the next — up to Config.Retries times. It returns New's noUpstream when nothing is
// pickable, and counts the request as rejected. A response counts as a success of its upstream; a failed dial
// or a broken connection as a failure.
func (c *Client) DoDeadline(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	c.pending.Add(1)
	defer c.pending.Add(-1)
	u := c.e.PickUpstream()
	if u == nil {
		c.e.Reject()
		req.SetUserValue(c, rejectedMark{})
		return c.noUpstream
	}
	c.e.Admit()
	err := c.send(u, req, resp, deadline)
	if err == nil || !retryable(err, req) || c.e.Retries() == 0 {
		return err
	}
	return c.retry(u, err, req, resp, deadline)
}

// retry sends req to upstreams not tried yet after first failed with err; it returns the last error when
// the retries, the deadline or the upstreams run out.
func (c *Client) retry(first *core.Upstream, err error, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	tried := []*core.Upstream{first}
	for range c.e.Retries() {
		if !time.Now().Before(deadline) {
			return err
		}
		u := c.e.PickOther(tried)
		if u == nil {
			return err
		}
		tried = append(tried, u)
		if err = c.send(u, req, resp, deadline); err == nil || !retryable(err, req) {
			return err
		}
	}
	return err
}

// send sends req to u and records the outcome in u's health.
func (c *Client) send(u *core.Upstream, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	u.Begin()
	defer u.End()
	if uri := req.URI(); u.TLS() != (string(uri.Scheme()) == "https") {
		if u.TLS() {
			uri.SetScheme("https")
		} else {
			uri.SetScheme("http")
		}
	}
	err := u.Client().(*fasthttp.HostClient).DoDeadline(req, resp, deadline)
	switch {
	case err == nil:
		c.e.Connected(u)
	case connectionLost(err):
		c.e.Failed(u) // a failed dial was counted by the dialer
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

// rejectedMark, stored in a request's user values under its Client, says that the Client counted the request
// as rejected, so that SetRejectHeaders does not count it again. The request's reset clears it.
type rejectedMark struct{}

// PendingRequests returns the number of requests in flight through c.
func (c *Client) PendingRequests() int { return int(c.pending.Load()) }

// dialError marks a failure to connect to an upstream: the request was not sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// CheckConfigureClient panics, naming the field, unless configure (Config.ConfigureClient) is nil or a
// func(server string, c *fasthttp.HostClient).
func CheckConfigureClient(configure any) {
	if configure == nil {
		return
	}
	if _, ok := configure.(func(string, *fasthttp.HostClient)); !ok {
		panic("upstreampick: Config.ConfigureClient must be a func(server string, c *fasthttp.HostClient)")
	}
}

// NewHostClient is the newClient of core.NewEngine for a Client: it builds u's HostClient, adjusted by
// Config.ConfigureClient (checked by CheckConfigureClient), whose dials go through Engine.Dial unless
// ConfigureClient set a dialer, and report to u's health.
func NewHostClient(e *core.Engine, u *core.Upstream) core.UpstreamClient {
	hc := &fasthttp.HostClient{
		Addr:                     u.Addr(),
		IsTLS:                    u.TLS(),
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
	if configure, ok := e.ConfigureClient().(func(string, *fasthttp.HostClient)); ok && configure != nil {
		configure(u.Server(), hc)
		hc.Addr, hc.IsTLS = u.Addr(), u.TLS()
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
			conn, err = e.Dial(ctx, addr)
			cancel()
		}
		if err != nil {
			e.Failed(u)
			return nil, &dialError{err: err}
		}
		e.Connected(u)
		return conn, nil
	}
	return hc
}
