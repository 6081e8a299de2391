package throttle

import (
	"io"
	"log"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Most tests' Throttlers have no trigger, and each warns at start that it is a fixed limit: expected here.
	// The test of the log sets its own output.
	log.SetOutput(io.Discard)
	goleak.VerifyTestMain(m)
}
