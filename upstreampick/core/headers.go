package core

import (
	"strconv"
	"time"
)

// The rejection headers' names, already canonical (no normalization per request).
const (
	HeaderRetryAfter = "Retry-After"
	HeaderRejectedBy = "Fiberguard-Rejected-By"
)

// RetryAfter returns the Retry-After value of a rejection (Config.RetryAfter in whole seconds, rounded up), or
// nil when Config.RetryAfter is negative: send no Retry-After then. The slice is shared: do not modify it.
func (p *Engine) RetryAfter() []byte { return p.retryAfter }

// RejectedBy returns the Fiberguard-Rejected-By value of a rejection: "upstreampick/" and Config.Name. The slice
// is shared: do not modify it.
func (p *Engine) RejectedBy() []byte { return p.rejectedBy }

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
