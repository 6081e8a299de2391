package core

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testBuckets are histogram boundaries like the runtime's: an open first and last bucket, then 1ms, 2ms, 4ms,
// 8ms and 16ms upper bounds.
var testBuckets = []float64{math.Inf(-1), 0.001, 0.002, 0.004, 0.008, 0.016, math.Inf(1)}

func TestSchedWindowQuantile(t *testing.T) {
	tests := []struct {
		name   string
		counts []uint64 // events per bucket since the baseline
		q      float64
		want   float64
	}{
		{"empty", []uint64{0, 0, 0, 0, 0, 0}, 0.9, 0},
		{"all in the first bucket", []uint64{0, 10, 0, 0, 0, 0}, 0.9, 0.002},
		{"90th percentile falls in the 8ms bucket", []uint64{0, 80, 0, 10, 10, 0}, 0.9, 0.008},
		{"exactly 90 % at or below 4ms", []uint64{0, 81, 9, 10, 0, 0}, 0.9, 0.004},
		{"the open last bucket stands for its lower bound", []uint64{0, 0, 0, 0, 0, 5}, 0.9, 0.016},
		{"the median", []uint64{0, 50, 50, 0, 0, 0}, 0.5, 0.002},
		{"the maximum", []uint64{0, 99, 0, 0, 1, 0}, 1, 0.016},
		{"the -Inf bucket counts as 0", []uint64{10, 0, 0, 0, 0, 0}, 0.9, 0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSchedWindow(testBuckets)
			w.reset(make([]uint64, len(tt.counts)))
			w.add(tt.counts, 0)
			if got := w.quantile(tt.q, 0); math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestSchedWindowDecays(t *testing.T) {
	w := newSchedWindow(testBuckets)
	w.reset([]uint64{0, 0, 0, 0, 0, 0})
	w.add([]uint64{0, 0, 0, 0, 0, 100}, 0) // a burst of long waits
	if got := w.quantile(0.9, 0); got != 0.016 {
		t.Fatalf("after the burst: %v, want 0.016", got)
	}
	// Then only short waits: the burst fades out with keep = 0.5 per step.
	cum := []uint64{0, 0, 0, 0, 0, 100}
	for step := 1; step <= 8; step++ {
		cum[1] += 100
		w.add(cum, 0.5)
	}
	if got := w.quantile(0.9, 0); got != 0.002 {
		t.Fatalf("after 8 quiet steps: %v, want 0.002 (total %v)", got, w.total)
	}
	// A counter that goes back (a new baseline) adds nothing rather than wrapping around.
	w.add([]uint64{0, 0, 0, 0, 0, 0}, 1)
	if w.total > 210 || w.total < 190 {
		t.Fatalf("total after a counter went back = %v, want the decayed 200", w.total)
	}
}

func TestSchedWindowNeedsEnoughEventsAbove(t *testing.T) {
	w := newSchedWindow(testBuckets)
	w.reset(make([]uint64, 6))
	w.add([]uint64{0, 0, 0, 0, 3, 0}, 0) // three late wake-ups
	if got := w.quantile(0.9, 4); got != 0 {
		t.Fatalf("3 events, 4 needed: %v, want 0", got)
	}
	w.add([]uint64{0, 0, 0, 0, 4, 0}, 1)
	if got := w.quantile(0.9, 4); got != 0.016 {
		t.Fatalf("4 late events: %v, want 0.016", got)
	}
	// Many short waits and three long ones: the three long ones alone do not lift even the 99th percentile.
	w.reset(make([]uint64, 6))
	w.add([]uint64{0, 100, 0, 0, 3, 0}, 0)
	if got := w.quantile(0.99, 4); got != 0.002 {
		t.Fatalf("p99 of 100 short and 3 long waits with 4 needed above: %v, want 0.002", got)
	}
}

func TestSchedLatencyLoad(t *testing.T) {
	now := time.Unix(1000, 0)
	cum := make([]uint64, len(testBuckets)-1)
	s := newSchedLatency(4*time.Millisecond, testBuckets, func(dst []uint64) { copy(dst, cum) },
		func() time.Time { return now })

	if got, err := s.Load(); err != nil || got != 0 {
		t.Fatalf("first Load = %v, %v; want the baseline 0", got, err)
	}
	// 100 waits, 90 % of them under 8ms: p90 = 8ms = twice the target.
	now = now.Add(20 * time.Millisecond)
	cum[1], cum[4] = 90, 10
	if got, _ := s.Load(); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("p90 in the 2ms bucket: load %v, want 0.5", got)
	}
	now = now.Add(20 * time.Millisecond)
	cum[3] += 400                                   // a backlog: most waits now 8ms
	if got, _ := s.Load(); math.Abs(got-2) > 1e-9 { // also the cap
		t.Fatalf("backlog: load %v, want 2", got)
	}
	// A long quiet spell: the window forgets the backlog (1s is ten time constants).
	now = now.Add(time.Second)
	cum[1] += 100
	if got, _ := s.Load(); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("after a quiet second: load %v, want 0.5", got)
	}
	// Two lone late wake-ups in a nearly idle process are no overload.
	now = now.Add(time.Second)
	cum[5] += 2
	if got, _ := s.Load(); got != 0 {
		t.Fatalf("two late wake-ups: load %v, want 0", got)
	}
	// Four more within the window are: the quantile rests on enough of them.
	now = now.Add(20 * time.Millisecond)
	cum[5] += 4
	if got, _ := s.Load(); math.Abs(got-schedMaxLoad) > 1e-9 {
		t.Fatalf("six late waits: load %v, want 16ms over 4ms capped at %v", got, schedMaxLoad)
	}
}

func TestSchedLatencyWithoutTheMetric(t *testing.T) {
	s := newSchedLatency(time.Millisecond, nil, func([]uint64) {}, time.Now)
	if _, err := s.Load(); err == nil {
		t.Fatal("Load without a histogram returned no error")
	}
}

func TestNewSchedLatencyTarget(t *testing.T) {
	if got := NewSchedLatency(0).Target(); got != DefaultSchedTarget {
		t.Fatalf("NewSchedLatency(0).Target() = %v, want %v", got, DefaultSchedTarget)
	}
	if got := NewSchedLatency(time.Second).Target(); got != time.Second {
		t.Fatalf("Target() = %v, want 1s", got)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a negative target did not panic")
		}
	}()
	NewSchedLatency(-time.Millisecond)
}

// The runtime's own histogram: an idle process reads about 0, and one whose goroutines outnumber its Ps while
// they all want the CPU reads far above its target.
func TestSchedLatencyOnThisRuntime(t *testing.T) {
	idle := NewSchedLatency(0)
	_, _ = idle.Load()
	for range 10 {
		time.Sleep(20 * time.Millisecond)
		if got, err := idle.Load(); err != nil || got > 0.5 {
			t.Fatalf("idle process: load %v, %v; want about 0", got, err)
		}
	}

	s := NewSchedLatency(time.Millisecond)
	_, _ = s.Load()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !stop.Load() {
				runtime.Gosched() // each yield puts the goroutine back in the run queue behind the others
				spin(time.Millisecond)
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	peak := 0.0
	for range 25 {
		time.Sleep(20 * time.Millisecond)
		got, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, got)
	}
	if peak < 1 {
		t.Fatalf("goroutines queueing for %d Ps: peak load %v, want above 1", runtime.GOMAXPROCS(0), peak)
	}
}

// spin burns about d of wall time on the CPU.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

func TestSchedWindowRecentWaitsCapTheQuantile(t *testing.T) {
	w := newSchedWindow(testBuckets)
	w.reset(make([]uint64, 6))
	w.add([]uint64{0, 0, 0, 0, 0, 100}, 0) // a backlog: 100 waits of 16ms and more
	if got := w.recentQuantile(0.9, 4); got != 0.016 {
		t.Fatalf("during the backlog: %v, want 0.016", got)
	}
	// The backlog is gone: the next step sees 5 short waits. The window alone still reads the backlog.
	w.add([]uint64{0, 5, 0, 0, 0, 100}, 0.8)
	if got := w.quantile(0.9, 4); got != 0.016 {
		t.Fatalf("the window alone: %v, want the backlog's 0.016", got)
	}
	if got := w.recentQuantile(0.9, 4); got != 0.002 {
		t.Fatalf("capped by the step's longest wait: %v, want 0.002", got)
	}
	// A step with no event at all says nothing new: the window's quantile stands.
	w.add([]uint64{0, 5, 0, 0, 0, 100}, 0.8)
	if got := w.recentQuantile(0.9, 4); got != 0.016 {
		t.Fatalf("a step without events: %v, want the window's 0.016", got)
	}
	// A step whose longest wait is long leaves a long quantile alone.
	w.add([]uint64{0, 5, 0, 0, 1, 100}, 0.8)
	if got := w.recentQuantile(0.9, 4); got != 0.016 {
		t.Fatalf("a step with one long wait: %v, want 0.016", got)
	}
	// The cap never raises the quantile: many short waits and one long wait in a step.
	w.reset(make([]uint64, 6))
	w.add([]uint64{0, 100, 0, 0, 0, 1}, 0)
	if got := w.recentQuantile(0.9, 4); got != 0.002 {
		t.Fatalf("short waits with one long: %v, want 0.002", got)
	}
}
