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
			q := newRunQueue(tt.target, func() (uint64, bool) { return tt.runnable, true }, func() int { return tt.procs })
			got, err := q.Load()
			if err != nil || math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("Load() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestRunQueueWithoutTheMetric(t *testing.T) {
	q := newRunQueue(0, func() (uint64, bool) { return 0, false }, func() int { return 2 })
	if _, err := q.Load(); !errors.Is(err, errNoRunQueueMetric) {
		t.Fatalf("Load() error %v, want %v", err, errNoRunQueueMetric)
	}
	// In a Max beside a signal that works, it is left out.
	m := Max(q, SignalFunc(func() (float64, error) { return 0.3, nil }))
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
