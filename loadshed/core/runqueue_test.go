package core

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunQueueLoad(t *testing.T) {
	tests := []struct {
		name     string
		target   float64
		runnable uint64
		procs    int
		want     float64
	}{
		{"nothing waits", 0, 0, 4, 0},
		{"one per P is half the default target", 0, 4, 4, 0.5},
		{"the default target", 0, 8, 4, 1},
		{"per P: the same queue on one P", 0, 8, 1, 2},
		{"a queue above twice the target reads 2", 0, 1000, 2, 2},
		{"a target of 1", 1, 3, 2, 1.5},
		{"a fractional target", 0.5, 1, 4, 0.5},
		{"a huge target", 1e12, 1 << 40, 1, float64(1<<40) / 1e12},
		{"GOMAXPROCS 0 counts as 1", 0, 1, 0, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := ^uint64(0) // a queue already seen once, so that this reading's queue counts
			q := newRunQueue(tt.target, func() (uint64, bool) { return n, true }, func() int { return max(tt.procs, 1) },
				ticker(20*time.Millisecond))
			if _, err := q.Load(); err != nil {
				t.Fatal(err)
			}
			n = tt.runnable
			q.procs = func() int { return tt.procs }
			got, err := q.Load()
			if err != nil || math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("Load() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// ticker is a clock that moves on by step at every call.
func ticker(step time.Duration) func() time.Time {
	at := time.Unix(1e9, 0)
	return func() time.Time { at = at.Add(step); return at }
}

func TestRunQueueCountsAQueueSeenTwice(t *testing.T) {
	// Runnable goroutines per reading with 2 Ps (load = n/4), one reading every 400ms, and what the signal reads.
	tests := []struct {
		name     string
		runnable []uint64
		want     []float64
	}{
		{"a lone burst reads 0", []uint64{0, 40, 0, 0, 0}, []float64{0, 0, 0, 0, 0}},
		{"a queue seen twice counts from the second", []uint64{40, 6, 0, 12}, []float64{0, 1.5, 0, 2}},
		{"a second queue within 2 s counts", []uint64{8, 0, 0, 0, 0, 8}, []float64{0, 0, 0, 0, 0, 2}},
		{"a queue more than 2 s after the last is a burst again", []uint64{8, 0, 0, 0, 0, 0, 8, 8}, []float64{0, 0, 0, 0, 0, 0, 0, 2}},
		{"a goroutine per P (half the target) is a queue", []uint64{2, 2}, []float64{0, 0.5}},
		{"less is read as it is, and is not a queue", []uint64{1, 1, 2, 1}, []float64{0.25, 0.25, 0, 0.25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, at := 0, time.Unix(1e9, 0)
			q := newRunQueue(0, func() (uint64, bool) { return tt.runnable[i], true }, func() int { return 2 },
				func() time.Time { return at })
			for ; i < len(tt.runnable); i, at = i+1, at.Add(400*time.Millisecond) {
				got, err := q.Load()
				if err != nil || math.Abs(got-tt.want[i]) > 1e-12 {
					t.Fatalf("reading %d (%d runnable): %v, %v; want %v", i, tt.runnable[i], got, err, tt.want[i])
				}
			}
		})
	}
}

func TestRunQueueWithoutTheMetric(t *testing.T) {
	q := newRunQueue(0, func() (uint64, bool) { return 0, false }, func() int { return 2 }, time.Now)
	if _, err := q.Load(); !errors.Is(err, errNoRunQueueMetric) {
		t.Fatalf("Load() error %v, want %v", err, errNoRunQueueMetric)
	}
	// In a Max beside a signal that works, it is left out.
	m := NewMax(q, SignalFunc(func() (float64, error) { return 0.3, nil }))
	if got, err := m.Load(); err != nil || got != 0.3 {
		t.Fatalf("Max without the metric = %v, %v; want the other signal's 0.3", got, err)
	}
}

func TestNewRunQueue(t *testing.T) {
	q := NewRunQueue(0)
	if q.Target() != DefaultRunQueueTarget || q.String() != "runnable goroutines per P over 2" {
		t.Fatalf("NewRunQueue(0): target %v, %q", q.Target(), q)
	}
	if q := NewRunQueue(3.5); q.Target() != 3.5 {
		t.Fatalf("NewRunQueue(3.5).Target() = %v", q.Target())
	}
	for _, bad := range []float64{-1, math.Inf(1), math.Inf(-1), math.NaN()} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "NewRunQueue target") {
					t.Fatalf("NewRunQueue(%v) panicked with %q, want a message naming the target", bad, msg)
				}
			}()
			NewRunQueue(bad)
		}()
	}
}

// The signal against this Go runtime: goroutines that spin and yield, 4 per P, keep about 3 per P runnable; once
// they stop, nothing is.
func TestRunQueueReadsTheRuntime(t *testing.T) {
	q := NewRunQueue(0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !stop.Load() {
				spin(200 * time.Microsecond)
				runtime.Gosched()
			}
		})
	}
	busy := 0.0
	for range 50 {
		l, err := q.Load()
		if err != nil {
			t.Fatal(err)
		}
		busy = max(busy, l)
		time.Sleep(2 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if busy < 1 {
		t.Fatalf("%d yielding goroutines on %d Ps: run queue peaked at %.3f, want 1 (2 per P) or more",
			4*runtime.GOMAXPROCS(0), runtime.GOMAXPROCS(0), busy)
	}
	waiting := 0
	for range 50 {
		l, err := q.Load()
		if err != nil {
			t.Fatal(err)
		}
		if l > 0 {
			waiting++
		}
		time.Sleep(2 * time.Millisecond)
	}
	if waiting > 5 {
		t.Fatalf("with nothing to run, %d of 50 readings saw runnable goroutines, want at most 5", waiting)
	}
}
