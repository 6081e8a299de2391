package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// busyNeighbours runs one busy loop per CPU in processes of their own, as other work on a laptop or a shared
// host would, and stops them at the end of the test.
func busyNeighbours(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a busy neighbour: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// The gateway on a busy machine, itself nearly idle, sheds nothing: its load is its own CPU and its own
// goroutines' waits, not the host's.
func TestGatewayBesideBusyNeighboursShedsNothing(t *testing.T) {
	busyNeighbours(t)
	time.Sleep(200 * time.Millisecond) // the neighbours are running before the gateway takes its first reading
	g := newTestGateway(t, nil)
	shed := 0
	for range 60 {
		if code, _ := fetch(t, g, "/"); code == 503 {
			shed++
		}
		time.Sleep(10 * time.Millisecond)
	}
	var st struct {
		Load     float64 `json:"load"`
		Signal   string  `json:"signal"`
		Readings []struct {
			Signal string  `json:"signal"`
			Load   float64 `json:"load"`
			Reason string  `json:"reason"`
		} `json:"readings"`
	}
	raw := statusOf(t, g, "loadshed", &st)
	if shed > 0 {
		t.Fatalf("%d of 60 requests shed beside busy neighbours; loadshed status %s", shed, raw)
	}
	if strings.Contains(st.Signal, "CPU of host") || len(st.Readings) != 3 || st.Load > 0.5 {
		t.Fatalf("loadshed reads %q at %.3f (%s), want its own CPU, scheduling latency and run queue, far below Lower", st.Signal, st.Load, raw)
	}
}
