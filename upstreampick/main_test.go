package upstreampick

import (
	"testing"

	"go.uber.org/goleak"
)

// The examples' upstream server starts fasthttp's process-wide Date refresher, and their clients' idle-connection
// cleaners sleep out MaxIdleConnDuration before they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"))
}
