package fasthttpclient

import (
	"errors"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
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
func (c *Client) Proxy(req *fasthttp.Request, resp *fasthttp.Response) Outcome {
	req.Header.Del(fasthttp.HeaderConnection)
	err := c.DoDeadline(req, resp, time.Now().Add(c.e.Timeout()))
	resp.Header.Del(fasthttp.HeaderConnection)
	switch {
	case err == nil:
		return Proxied
	case errors.Is(err, c.noUpstream):
		return Rejected
	case errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout):
		return TimedOut
	}
	return Failed
}

// Header names, already canonical: no normalization per request.
var (
	headerRetryAfter = []byte(core.HeaderRetryAfter)
	headerRejectedBy = []byte(core.HeaderRejectedBy)
)

// SetRejectHeaders prepares the answer to a request no upstream can take, before Picker.Reject calls OnReject:
// it sets the Retry-After (unless Config.RetryAfter is negative) and Fiberguard-Rejected-By headers on h, and
// counts req as rejected unless c counted it already, which it does for every request LBClient, c itself or
// Proxy finds no upstream for. It does not allocate.
func (c *Client) SetRejectHeaders(req *fasthttp.Request, h *fasthttp.ResponseHeader) {
	if req.UserValue(c) == nil {
		c.e.Reject()
		req.SetUserValue(c, rejectedMark{})
	}
	if ra := c.e.RetryAfter(); ra != nil {
		h.SetCanonical(headerRetryAfter, ra)
	}
	h.SetCanonical(headerRejectedBy, c.e.RejectedBy())
}
