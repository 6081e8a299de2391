package core

import (
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueWaitLoad(t *testing.T) {
	counts := make([]uint64, len(testBuckets)-1)
	now := time.Unix(0, 0)
	q := newQueueWait(0, testBuckets, func(dst []uint64) { copy(dst, counts) }, func() time.Time { return now })
	if q.Target() != DefaultQueueWaitTarget || q.String() != "mean wait for a CPU over 5ms" {
		t.Fatalf("target %v, name %q", q.Target(), q.String())
	}
	read := func() float64 {
		t.Helper()
		got, err := q.Load()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read(); got != 0 {
		t.Fatalf("the first reading takes the baseline: %v", got)
	}
	// 20 ms later: 30 waits of 2 ms and 10 of 8 ms (each bucket at its upper bound): mean 3.5 ms, 0.7 of 5 ms.
	now = now.Add(20 * time.Millisecond)
	counts[1], counts[3] = 30, 10
	if got := read(); math.Abs(got-0.7) > 1e-9 {
		t.Fatalf("mean of 30×2ms and 10×8ms over 5ms = %v, want 0.7", got)
	}
	// No new waits: the window decays but its mean stays what it was.
	now = now.Add(20 * time.Millisecond)
	if got := read(); math.Abs(got-0.7) > 1e-9 {
		t.Fatalf("no new events: %v, want the same mean 0.7", got)
	}
	// A backlog: 40 waits of 16 ms (the open last bucket stands for its lower bound). The older waits have
	// decayed by e^-0.5 twice, so the new ones weigh most.
	now = now.Add(20 * time.Millisecond)
	counts[5] = 40
	old := 40 * math.Exp(-1.0)
	want := (old*3.5e-3 + 40*16e-3) / (old + 40) / 5e-3
	if got := read(); math.Abs(got-want) > 1e-9 || got < 2 {
		t.Fatalf("after a backlog: %v, want %v", got, want)
	}
	// Long after, with only short waits: the backlog is forgotten.
	now = now.Add(time.Second)
	counts[1] += 100
	if got := read(); math.Abs(got-0.4) > 0.01 {
		t.Fatalf("a second later, short waits only: %v, want about 0.4 (2 ms over 5 ms)", got)
	}
}

func TestQueueWaitWithoutTheMetric(t *testing.T) {
	q := newQueueWait(time.Millisecond, nil, func([]uint64) {}, time.Now)
	if _, err := q.Load(); err == nil || !strings.Contains(err.Error(), schedMetric) {
		t.Fatalf("Load = %v, want an error naming %s", err, schedMetric)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "NewQueueWait") {
			t.Fatalf("a negative target: panic %v, want one naming NewQueueWait", r)
		}
	}()
	NewQueueWait(-time.Millisecond)
}

func TestQueueWaitOnThisRuntime(t *testing.T) {
	// Idle: nothing waits. Then 4 runnable goroutines per P, each yielding after 2 ms of work: each waits
	// several milliseconds, and the mean crosses 1 ms.
	q := NewQueueWait(time.Millisecond)
	if _, err := q.Load(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond)
	if got, err := q.Load(); err != nil || got > 1 {
		t.Fatalf("idle: %v (%v), want below 1", got, err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !stop.Load() {
				spin(2 * time.Millisecond)
				runtime.Gosched()
			}
		})
	}
	peak := 0.0
	for range 25 {
		time.Sleep(20 * time.Millisecond)
		got, err := q.Load()
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, got)
	}
	stop.Store(true)
	wg.Wait()
	if peak < 1 {
		t.Fatalf("4 goroutines per P queueing for 2 ms slices: mean wait peaked at %v ms, want above 1 ms", peak)
	}
}
