package core

import (
	"strconv"
	"time"
)

// The response headers of a rejection.
const (
	HeaderRetryAfter = "Retry-After"
	HeaderRejectedBy = "Fiberguard-Rejected-By"
)

// RetryAfter is the value of the Retry-After header of a rejection, or nil when none is sent. The slice is
// shared: do not modify it.
func (e *Engine) RetryAfter() []byte { return e.retryAfter }

// RejectedBy is the value of the Fiberguard-Rejected-By header of a rejection, "loadshed/<Name>". The slice is
// shared: do not modify it.
func (e *Engine) RejectedBy() []byte { return e.rejectedBy }

// retryAfterHeader is the Retry-After value of a rejection: whole seconds, rounded up, at least 1; nil (no
// header) when d is negative.
func retryAfterHeader(d time.Duration) []byte {
	if d < 0 {
		return nil
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 || secs == 0 {
		secs++
	}
	return strconv.AppendInt(nil, secs, 10)
}
