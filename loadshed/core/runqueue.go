package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
)

// RunQueue is a Signal of how many of this process's goroutines wait for a CPU right now: the Go runtime's count
// of runnable goroutines (runtime/metrics /sched/goroutines/runnable:goroutines, the goroutines in the run queues,
// not those running), per P (GOMAXPROCS), as a fraction of Target.
//
// It is the queue itself, where SchedLatency is the time the goroutines that got a CPU had waited: a process
// that gets its CPU in bursts (starved by neighbours, or throttled by a quota) wakes up to a run queue of the
// requests that arrived meanwhile, and RunQueue reads it at once, before they have run. An idle process reads 0
// whatever its neighbours do; a busy process with CPU to spare reads near 0, since a goroutine that becomes
// runnable finds an idle P.
//
// A reading is one instant, capped at 2 like SchedLatency's. Load is safe for concurrent use; the zero value
// is not usable, create it with NewRunQueue.
type RunQueue struct {
	target float64
	read   func() (runnable uint64, ok bool)
	procs  func() int

	mu sync.Mutex
}

// DefaultRunQueueTarget is the number of runnable goroutines per P that NewRunQueue(0) counts as full load: a
// goroutine or two waiting behind the running one is ordinary; more means the process is behind.
const DefaultRunQueueTarget = 2

const (
	runQueueMetric  = "/sched/goroutines/runnable:goroutines"
	runQueueMaxLoad = 2
)

var errNoRunQueueMetric = errors.New("loadshed: the Go runtime has no " + runQueueMetric + " metric")

// NewRunQueue returns the run-queue signal: load 1 when target goroutines per P wait for a CPU. A target of 0
// means DefaultRunQueueTarget. It panics on a negative, infinite or NaN target.
func NewRunQueue(target float64) *RunQueue {
	if !(target >= 0) || math.IsInf(target, 1) {
		panic(fmt.Sprintf("loadshed: NewRunQueue target must be a finite number >= 0, got %v", target))
	}
	sample := []rtmetrics.Sample{{Name: runQueueMetric}}
	read := func() (uint64, bool) {
		rtmetrics.Read(sample)
		if sample[0].Value.Kind() != rtmetrics.KindUint64 {
			return 0, false
		}
		return sample[0].Value.Uint64(), true
	}
	return newRunQueue(target, read, func() int { return runtime.GOMAXPROCS(0) })
}

func newRunQueue(target float64, read func() (uint64, bool), procs func() int) *RunQueue {
	if target == 0 {
		target = DefaultRunQueueTarget
	}
	return &RunQueue{target: target, read: read, procs: procs}
}

// Target is the number of runnable goroutines per P at which the load is 1.
func (r *RunQueue) Target() float64 { return r.target }

// String describes the signal, for logs and Status.
func (r *RunQueue) String() string {
	return fmt.Sprintf("runnable goroutines per P over %g", r.target)
}

// Load returns the runnable goroutines per P as a fraction of Target, at most 2.
func (r *RunQueue) Load() (float64, error) {
	r.mu.Lock() // the runtime/metrics sample is reused
	defer r.mu.Unlock()
	n, ok := r.read()
	if !ok {
		return 0, errNoRunQueueMetric
	}
	return min(float64(n)/float64(max(r.procs(), 1))/r.target, runQueueMaxLoad), nil
}
