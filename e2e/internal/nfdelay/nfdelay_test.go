//go:build linux

package nfdelay

import (
	"testing"
	"time"
)

func TestStartRejectsNonPositiveDelay(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Millisecond} {
		if l, err := Start(4200, d); err == nil {
			_ = l.Close()
			t.Fatalf("Start(%v) succeeded, want an error", d)
		}
	}
}
