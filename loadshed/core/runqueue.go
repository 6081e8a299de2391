package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
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
// A reading is one instant, capped at 2 like SchedLatency's. A queue (a reading of half of Target or more)
// counts only within 2 s of the previous one: a burst of requests arriving together on a quiet process (a
// reading taken just as they arrive, which the sampler's wake-up on a surge of requests makes likely) queues them
// for an instant, and it reads 0. A process that queues again and again, starved or behind its work, reads its
// queue from the second time it sees one.
//
// Within a Controller (the default signal's) that an Engine reads, the queue counts by the share of the requests
// decided since the previous reading that were admitted: every arriving request is a runnable goroutine until it
// has been read, whether it is then served or rejected, and a rejection costs microseconds where a served request
// costs its handler. At twice its capacity a process with one P has about two arrivals runnable behind every
// request it serves, however many it rejects; counting them in full would read as a queue that no share shed
// could shorten. When no request was decided (goroutines that are not requests queue), or no request was
// rejected, it counts in full. Load is safe for concurrent use; the zero value is not usable, create it with
// NewRunQueue.
type RunQueue struct {
	target float64
	read   func() (runnable uint64, ok bool)
	procs  func() int
	now    func() time.Time
	// admitted is the owning Controller's share of the requests decided since its previous reading that were
	// admitted (math.Float64bits), nil without a Controller: the queue counts by it.
	admitted *atomic.Uint64

	mu       sync.Mutex // guards lastSeen and the runtime/metrics sample read reuses
	lastSeen time.Time  // of the last reading that saw a queue
}

// DefaultRunQueueTarget is the number of runnable goroutines per P that NewRunQueue(0) counts as full load: a
// goroutine or two waiting behind the running one is ordinary; more means the process is behind.
const DefaultRunQueueTarget = 2

const (
	runQueueMetric  = "/sched/goroutines/runnable:goroutines"
	runQueueMaxLoad = 2
	// runQueueSeen is the load at which a reading sees a queue: a goroutine per P waiting at the default target.
	runQueueSeen = 0.5
	// runQueueConfirm is how soon after another a queue must come to count.
	runQueueConfirm = 2 * time.Second
)

var errNoRunQueueMetric = errors.New("loadshed: the Go runtime has no " + runQueueMetric + " metric")

// NewRunQueue returns the run-queue signal: load 1 when target goroutines per P wait for a CPU. A target of 0
// means DefaultRunQueueTarget. It panics on a negative, infinite or NaN target.
func NewRunQueue(target float64) *RunQueue {
	if !(target >= 0) || math.IsInf(target, 1) {
		panic(fmt.Sprintf("loadshed: NewRunQueue target must be a finite number >= 0, got %v", target))
	}
	return newRunQueue(target, runnableReader(), func() int { return runtime.GOMAXPROCS(0) }, time.Now)
}

// runnableReader returns a reader of the runtime's count of runnable goroutines, for one caller at a time; ok
// is false when the runtime has no such metric.
func runnableReader() func() (runnable uint64, ok bool) {
	sample := []rtmetrics.Sample{{Name: runQueueMetric}}
	return func() (uint64, bool) {
		rtmetrics.Read(sample)
		if sample[0].Value.Kind() != rtmetrics.KindUint64 {
			return 0, false
		}
		return sample[0].Value.Uint64(), true
	}
}

func newRunQueue(target float64, read func() (uint64, bool), procs func() int, now func() time.Time) *RunQueue {
	if target == 0 {
		target = DefaultRunQueueTarget
	}
	return &RunQueue{target: target, read: read, procs: procs, now: now}
}

// Target is the number of runnable goroutines per P at which the load is 1.
func (r *RunQueue) Target() float64 { return r.target }

// String describes the signal, for logs and Status.
func (r *RunQueue) String() string {
	return fmt.Sprintf("runnable goroutines per P over %g", r.target)
}

// Load returns the runnable goroutines per P as a fraction of Target, at most 2; a queue of half of Target or
// more reads 0 unless another came within the last 2 s.
func (r *RunQueue) Load() (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.read()
	if !ok {
		return 0, errNoRunQueueMetric
	}
	load := float64(n) / float64(max(r.procs(), 1)) / r.target
	if r.admitted != nil {
		load *= math.Float64frombits(r.admitted.Load())
	}
	if load < runQueueSeen {
		return load, nil
	}
	at := r.now()
	confirmed := !r.lastSeen.IsZero() && at.Sub(r.lastSeen) <= runQueueConfirm
	r.lastSeen = at
	if !confirmed {
		return 0, nil // a lone queue is a burst of arrivals, not an overload
	}
	return min(load, runQueueMaxLoad), nil
}
