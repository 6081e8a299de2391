package upstreampick

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide Date header refresher.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// fasthttp's per-HostClient idle-connection cleaner sleeps up to MaxIdleConnDuration between passes and
		// ends on its own once the client holds no connection; it cannot be woken.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	)
}
