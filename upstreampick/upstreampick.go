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
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// ErrNoUpstream is returned when no upstream can take a request: every one is unhealthy or draining. It is a
// *fiber.Error with status 503, so Fiber's error handler answers 503 Service Unavailable at once, through
// proxy.Balancer as well as through Handler.
var ErrNoUpstream = &fiber.Error{Code: fiber.StatusServiceUnavailable, Message: "upstreampick: no upstream available"}

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
