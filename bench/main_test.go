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
	)
}
