package bench

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// aegis starts its CPU samplers at init, for the life of the process.
		goleak.IgnoreTopFunction("github.com/go-kratos/aegis/internal/cpu.init.0.func1"),
		goleak.IgnoreTopFunction("github.com/go-kratos/aegis/ratelimit/bbr.cpuproc"),
		// fasthttp's process-wide Date refresher and its default dialer's DNS cache cleaner never end; a
		// HostClient's idle-connection cleaner ends once its idle period has passed after the last request.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	)
}
