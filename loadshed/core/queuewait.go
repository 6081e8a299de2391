package core

import (
	"fmt"
	"math"
	rtmetrics "runtime/metrics"
	"sync"
	"time"
)

// QueueWait is a Signal of how long this process's goroutines wait for a CPU: the mean time a goroutine spent
// runnable before it ran, over the last few readings (runtime/metrics /sched/latencies:seconds, whose runtime
// samples one goroutine transition in eight), as a fraction of Target.
//
// By Little's law the mean wait times the rate of goroutine wake-ups is the number of goroutines waiting on
// average, so the mean measures the queue itself, weighted by how long each waits: a burst of requests that are
// answered at once barely moves it, a backlog of work that keeps goroutines waiting does. Where SchedLatency reads
// a high quantile (the goroutines that waited longest), QueueWait reads the typical wait, which moves steadily
// with the length of the queue and is the quantity a controller of that queue needs.
//
// On its own it also reads waits that other processes cause: an idle process beside busy neighbours waits for a
// CPU at each wake-up. A Settled therefore weighs it by the process's utilisation (see Settled), which only the
// process's own work raises. Load is meant for one sampler; the zero value is not usable, create it with
// NewQueueWait.
type QueueWait struct {
	target time.Duration
	read   func(dst []uint64) // the cumulative counts of the histogram
	now    func() time.Time

	mu      sync.Mutex
	window  schedWindow
	primed  bool
	prevAt  time.Time
	current []uint64
}

// DefaultQueueWaitTarget is the mean wait NewQueueWait(0) counts as load 1: a few milliseconds, so that an
// overloaded process holding it keeps its CPUs busy with a short queue while its requests wait little.
const DefaultQueueWaitTarget = 5 * time.Millisecond

// queueWaitMemory is the time constant of the window the mean is taken over: two or three readings at the
// default Interval, enough wake-ups for a mean under load, short enough for the controller it feeds.
const queueWaitMemory = 40 * time.Millisecond

// NewQueueWait returns the queue-wait signal: load 1 when the mean wait of the recent goroutine wake-ups reaches
// target. A target of 0 means DefaultQueueWaitTarget. It panics on a negative target.
func NewQueueWait(target time.Duration) *QueueWait {
	if target < 0 {
		panic(fmt.Sprintf("loadshed: NewQueueWait target must be >= 0, got %v", target))
	}
	sample := []rtmetrics.Sample{{Name: schedMetric}}
	rtmetrics.Read(sample)
	var buckets []float64
	if sample[0].Value.Kind() == rtmetrics.KindFloat64Histogram {
		buckets = append(buckets, sample[0].Value.Float64Histogram().Buckets...)
	}
	read := func(dst []uint64) {
		rtmetrics.Read(sample)
		if sample[0].Value.Kind() == rtmetrics.KindFloat64Histogram {
			copy(dst, sample[0].Value.Float64Histogram().Counts)
		}
	}
	return newQueueWait(target, buckets, read, time.Now)
}

func newQueueWait(target time.Duration, buckets []float64, read func([]uint64), now func() time.Time) *QueueWait {
	if target == 0 {
		target = DefaultQueueWaitTarget
	}
	return &QueueWait{target: target, read: read, now: now, window: newSchedWindow(buckets),
		current: make([]uint64, max(len(buckets)-1, 0))}
}

// Target is the mean wait at which the load is 1.
func (q *QueueWait) Target() time.Duration { return q.target }

// String describes the signal, for logs and Status.
func (q *QueueWait) String() string {
	return fmt.Sprintf("mean wait for a CPU over %v", q.target)
}

// Load returns the recent mean wait as a fraction of Target. The first call only takes the baseline and returns
// 0; so does a window without wake-ups.
func (q *QueueWait) Load() (float64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.current) == 0 {
		return 0, errNoSchedMetric
	}
	q.read(q.current)
	at := q.now()
	if !q.primed {
		q.window.reset(q.current)
		q.primed, q.prevAt = true, at
		return 0, nil
	}
	keep := math.Exp(-float64(at.Sub(q.prevAt)) / float64(queueWaitMemory))
	q.prevAt = at
	q.window.add(q.current, keep)
	return q.window.mean() / q.target.Seconds(), nil
}

// mean is the mean wait of the window's events: 0 when it holds none.
func (w *schedWindow) mean() float64 {
	if !(w.total > 0) {
		return 0
	}
	sum := 0.0
	for i, n := range w.decayed {
		sum += n * w.bounds[i]
	}
	return sum / w.total
}
