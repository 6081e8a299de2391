package core

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"
)

// Outcome is what became of a request Proxy sent.
type Outcome int

const (
	// Proxied means resp holds the upstream's response.
	Proxied Outcome = iota
	// Rejected means no upstream could take the request (it is counted; answer it through Reject).
	Rejected
	// TimedOut means the upstream did not answer within Config.Timeout (504 for the adapter).
	TimedOut
	// Failed means any other upstream failure (502 for the adapter).
	Failed
)

// Proxy sends a request the server received to a picked upstream and leaves the upstream's response in resp,
// as proxy.Balancer does with LBClient: the Connection header is dropped both ways (it is hop-by-hop) and the
// request must be answered within Config.Timeout.
func (p *Engine) Proxy(req *fasthttp.Request, resp *fasthttp.Response) Outcome {
	req.Header.Del(fasthttp.HeaderConnection)
	err := p.bal.DoDeadline(req, resp, time.Now().Add(p.cfg.timeout))
	resp.Header.Del(fasthttp.HeaderConnection)
	switch {
	case err == nil:
		return Proxied
	case errors.Is(err, p.noUpstream):
		return Rejected
	case errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout):
		return TimedOut
	}
	return Failed
}
