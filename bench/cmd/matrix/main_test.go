package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary be the app too: the real run test starts it again with -serve, as the command
// starts itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveFlag {
		if err := serve(os.Args[1:]); err != nil {
			os.Exit(2)
		}
		return
	}
	goleak.VerifyTestMain(m,
		// The anchors' packages start samplers at init, for the life of the process: aegis (through package
		// bench), go-zero's core/stat and core/proc.
		goleak.IgnoreTopFunction("github.com/go-kratos/aegis/internal/cpu.init.0.func1"),
		goleak.IgnoreTopFunction("github.com/go-kratos/aegis/ratelimit/bbr.cpuproc"),
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/stat.init.1.func1"),
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/proc.init.1.func1"),
		// fasthttp keeps its Date header current from the first request a Fiber app serves, for the life of the
		// process.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}
