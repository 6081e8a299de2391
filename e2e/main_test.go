package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/fiberguard/fiberguard/e2e/internal/gatewayproc"
	"go.uber.org/goleak"
)

// TestMain fails the end-to-end suite when any test leaves a goroutine running, and removes the gateway
// binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	gatewayproc.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
