package scenario

import (
	"os"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		v    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.v...)
		if got := Median(tt.v); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.v, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.v[i] {
				t.Fatalf("Median reordered its argument: %v, was %v", tt.v, in)
			}
		}
	}
}

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
