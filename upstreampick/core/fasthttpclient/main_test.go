package fasthttpclient

import (
	"testing"

	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// fasthttp starts its process-wide Date refresher on the first response header it writes; it must start
	// here, outside any synctest bubble, or it would be a bubble's goroutine that never ends.
	var h fasthttp.ResponseHeader
	_ = h.Header()
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide Date header refresher.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// fasthttp's per-HostClient idle-connection cleaner sleeps up to MaxIdleConnDuration between passes and
		// ends on its own once the client holds no connection; it cannot be woken.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	)
}
