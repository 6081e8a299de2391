package e2e

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the end-to-end suite when any test leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
