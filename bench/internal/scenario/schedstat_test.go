package scenario

import (
	"os"
	"testing"
	"time"
)

// processCPU is this process's CPU time as the kernel accounts it in /proc/self/stat (what App.CPUTime reads
// of an app), a source apart from the schedstat that ThreadTimes reads.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := parseStatCPU(data)
	if err != nil {
		t.Fatal(err)
	}
	return cpu
}

func TestThreadTimesCountsThisProcessRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task here: ThreadTimes reads Linux's per-thread schedstat")
	}
	run0, _, err := ThreadTimes("self")
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has given this process 200ms of CPU (on a busy machine that takes longer than 200ms
	// of wall time), within 10s. /proc/self/stat counts in 10ms ticks, sampled: over 200ms its error is a few
	// ticks, which the 80 % below allows.
	cpu0 := processCPU(t)
	for end := time.Now().Add(10 * time.Second); processCPU(t)-cpu0 < 200*time.Millisecond && time.Now().Before(end); {
	}
	spun := processCPU(t) - cpu0
	run1, wait1, err := ThreadTimes("self")
	if err != nil || wait1 < 0 {
		t.Fatalf("ThreadTimes: wait %v, %v", wait1, err)
	}
	if d := run1 - run0; d < spun*8/10 {
		t.Fatalf("%v of this process's CPU time added %v of run time, want at least 80 %% of it", spun, d)
	}
	if _, _, err := ThreadTimes("999999999"); err == nil {
		t.Fatal("ThreadTimes of a pid that does not exist returned no error")
	}
}
