package scenario

import (
	"os"
	"testing"
	"time"
)

func TestThreadTimesCountsThisProcessRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task here: ThreadTimes reads Linux's per-thread schedstat")
	}
	run0, _, err := ThreadTimes("self")
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	run1, wait1, err := ThreadTimes("self")
	if err != nil || wait1 < 0 {
		t.Fatalf("ThreadTimes: wait %v, %v", wait1, err)
	}
	if d := run1 - run0; d < 30*time.Millisecond {
		t.Fatalf("50ms of spinning added %v of run time, want at least 30ms", d)
	}
	if _, _, err := ThreadTimes("999999999"); err == nil {
		t.Fatal("ThreadTimes of a pid that does not exist returned no error")
	}
}
