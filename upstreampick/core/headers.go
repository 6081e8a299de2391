package core

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Header names, already canonical: no normalization per request.
var (
	headerRetryAfter = []byte(fasthttp.HeaderRetryAfter)
	headerRejectedBy = []byte("Fiberguard-Rejected-By")
)

// retryAfterHeader is the Retry-After value for d: whole seconds, rounded up, at least 1; nil (no header) when
// d is negative.
func retryAfterHeader(d time.Duration) []byte {
	if d < 0 {
		return nil
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 || secs == 0 {
		secs++ // no overflow: d/time.Second is far below the largest int64
	}
	return strconv.AppendInt(nil, secs, 10)
}

// SetRejectHeaders prepares the answer to a request no upstream can take, before Picker.Reject calls OnReject:
// it sets the Retry-After (unless Config.RetryAfter is negative) and Fiberguard-Rejected-By headers on h, and
// counts req as rejected unless this Engine counted it already, which it does for every request LBClient,
// BalancingClient or Proxy finds no upstream for. It does not allocate.
func (p *Engine) SetRejectHeaders(req *fasthttp.Request, h *fasthttp.ResponseHeader) {
	p.bal.countRejected(req)
	if p.retryAfter != nil {
		h.SetCanonical(headerRetryAfter, p.retryAfter)
	}
	h.SetCanonical(headerRejectedBy, p.rejectedBy)
}
