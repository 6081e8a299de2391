package main

import (
	"testing"
	"time"
)

// TestSlowAtInterleaves checks the mixed handler's mix: exactly 10 slow requests in any 100 consecutive ones,
// wherever the window starts (the first request included).
func TestSlowAtInterleaves(t *testing.T) {
	const n = 1000
	var slow [n + 100]bool
	for i := range slow {
		slow[i] = slowAt(uint64(i))
	}
	for start := range n {
		count := 0
		for _, s := range slow[start : start+100] {
			if s {
				count++
			}
		}
		if count != 10 {
			t.Fatalf("requests %d to %d: %d slow, want 10", start, start+99, count)
		}
	}
	if slowAt(0) || !slowAt(9) || slowAt(10) {
		t.Error("want the tenth request of every ten slow")
	}
}

func TestMeanWork(t *testing.T) {
	if got, want := meanWork("mixed"), 680*time.Microsecond; got != want { // 0.9 × 0.2 ms + 0.1 × 5 ms
		t.Errorf("mixed: %v, want %v", got, want)
	}
	if meanWork("cpu") != time.Millisecond || meanWork("wait") != 50*time.Microsecond {
		t.Error("cpu and wait")
	}
}

func TestWorkHandlerUnknown(t *testing.T) {
	if _, err := workHandler("io", 1000); err == nil {
		t.Fatal("an unknown handler was accepted")
	}
}
