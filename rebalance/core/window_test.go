package core

import (
	"math"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	l := newWindow(3)
	steps := []struct{ add, want int }{
		{10, 10}, // the first count is taken as is
		{40, 10}, // a rise waits for the window
		{40, 10},
		{40, 40}, // ... and counts once it filled the window
		{5, 5},   // a fall counts at once
		{50, 5},
		{50, 5},
		{50, 50},
	}
	for i, s := range steps {
		if got := l.add(s.add); got != s.want {
			t.Fatalf("step %d: add(%d) = %d, want %d", i, s.add, got, s.want)
		}
	}

	one := newWindow(0) // a window below one interval uses the current count alone
	for _, c := range []int{7, 70, 3} {
		if got := one.add(c); got != c {
			t.Fatalf("size-1 window: add(%d) = %d", c, got)
		}
	}
}

// TestWindowRingIsBounded: the ring of counts holds one count per interval of the window, never more than
// maxWindowIntervals+1 whatever it is asked for (an Interval of 1ns over a 40 s window once asked for 40 GB).
func TestWindowRingIsBounded(t *testing.T) {
	for _, tt := range []struct{ size, want int }{
		{-5, 1}, {0, 1}, {1, 1}, {6, 6}, {maxWindowIntervals + 1, maxWindowIntervals + 1},
		{maxWindowIntervals + 2, maxWindowIntervals + 1}, {int(40 * time.Second), maxWindowIntervals + 1},
		{math.MaxInt, maxWindowIntervals + 1},
	} {
		if got := len(newWindow(tt.size).counts); got != tt.want {
			t.Fatalf("newWindow(%d) keeps %d counts, want %d", tt.size, got, tt.want)
		}
	}
	for _, tt := range []struct {
		window, interval time.Duration
		want             int
	}{
		{5 * time.Second, time.Second, 6},
		{time.Millisecond, time.Second, 1},
		{1000 * time.Second, time.Second, 1001},
	} {
		e := NewEngine(Config[any, any]{Cluster: fixed(40, 3), Window: tt.window, Interval: tt.interval, DisableMetrics: true}.WithDefaults(Defaults[any, any]()), nil)
		if got := len(e.recent.counts); got != tt.want {
			t.Fatalf("Window %v at Interval %v keeps %d counts, want %d", tt.window, tt.interval, got, tt.want)
		}
	}
}
