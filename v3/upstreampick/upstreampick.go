// Package upstreampick sends each proxied request to one of the nearest healthy upstreams, for Fiber's
// proxy.Balancer or as a Fiber handler of its own.
//
// A health goroutine dials every upstream once per interval and keeps an exponentially weighted average of its
// TCP connect time. Upstreams are grouped into latency tiers; a request goes to an upstream picked at random
// among the healthy ones of the nearest tier, so traffic stays in the nearest site and spreads evenly inside it.
// An upstream that fails to connect twice in a row (health dial or proxied request) gets no traffic until a
// connection to it succeeds again. When no upstream can take a request, Handler rejects it through
// Config.OnReject and LBClient returns ErrNoUpstream, which an ErrorHandler answers with Picker.Reject.
//
// This package is the Fiber v3 adapter over github.com/fiberguard/fiberguard/upstreampick/core, which holds
// everything that does not need Fiber; github.com/fiberguard/fiberguard/upstreampick is the same for Fiber v2,
// with the same Config, behaviour and metrics.
package upstreampick

import (
	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/gofiber/fiber/v3"
)

// ErrNoUpstream is returned by LBClient and BalancingClient when no upstream can take a request: every one is
// unhealthy or draining. It is a *fiber.Error of Fiber v3 with status 503, so through proxy.Balancer Fiber's
// error handler answers 503 Service Unavailable at once; an ErrorHandler answers it as Handler would with
// Picker.Reject (see the README). Handler calls Config.OnReject instead.
var ErrNoUpstream = &fiber.Error{Code: fiber.StatusServiceUnavailable, Message: "upstreampick: no upstream available"}

// New creates a Picker (see NewPicker) and returns its Handler. Its health goroutine stops when Config.Context
// is done; with no Context it runs for the life of the process.
func New(config ...Config) fiber.Handler {
	return NewPicker(config...).Handler()
}

// Handler returns a fiber.Handler that proxies the request to a picked upstream, for apps that need none of
// proxy.Balancer's options. When no upstream is pickable it answers as Reject does: it sets the Retry-After and
// Fiberguard-Rejected-By headers and calls Config.OnReject (by default 503). It returns fiber.ErrGatewayTimeout
// (504) when the upstream did not answer within Config.Timeout and fiber.ErrBadGateway (502) on any other
// upstream failure, each for the app's ErrorHandler. Every call returns an equivalent handler over the same
// Picker.
func (p *Picker) Handler() fiber.Handler {
	return func(c fiber.Ctx) error {
		if p.cfg.Next != nil && p.cfg.Next(c) {
			return c.Next()
		}
		switch p.core.Proxy(c.Request(), c.Response()) {
		case core.Proxied:
			return nil
		case core.Rejected:
			return p.Reject(c)
		case core.TimedOut:
			return fiber.ErrGatewayTimeout
		}
		return fiber.ErrBadGateway
	}
}

// Reject answers c as Handler does when no upstream can take it: it sets the Retry-After and
// Fiberguard-Rejected-By headers, counts the request as rejected (in Status and the requests_total metric)
// unless LBClient or BalancingClient already counted it, and calls Config.OnReject. Its use is the app's
// ErrorHandler, for the ErrNoUpstream of proxy.Balancer:
//
//	if errors.Is(err, upstreampick.ErrNoUpstream) {
//		return picker.Reject(c)
//	}
func (p *Picker) Reject(c fiber.Ctx) error {
	p.core.Reject(c.Request(), &c.Response().Header)
	return p.cfg.OnReject(c)
}
