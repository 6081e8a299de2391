package core

import (
	"errors"
	"fmt"
	"math"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// SchedLatency is a Signal of how long this process's runnable goroutines wait for a CPU: a high quantile of the
// Go scheduler's latency histogram (runtime/metrics /sched/latencies:seconds) over the recent past, as a
// fraction of Target. It reads the process's own overload whatever the cause: a CPU quota, busy neighbours or
// GOMAXPROCS. An idle process on a busy host reads near 0, since a goroutine that becomes runnable finds an idle
// P; a process that wants more CPU than it gets queues goroutines behind each other and reads above 1 as soon as
// the quantile passes Target.
//
// The recent past is an exponentially decaying histogram with a memory of about 100ms, capped by the longest wait
// since the previous reading: once the goroutines that run wait no more, the past backlog no longer counts. The
// quantile must rest on at least 4 events above it: a nearly idle process on a busy host sees the odd late
// wake-up, and a lone late wake-up is not an overload. (The runtime samples one goroutine transition in eight, so
// 4 events stand for about 32 waits.) A reading is capped at 2: a backlog's long waits would otherwise hold the
// Shedder's smoothed load above Upper, shedding everything, long after the backlog has drained.
//
// Within a Controller (the default signal's) that an Engine reads, the wait behind one running request is
// allowed beside Target: the CPU time a request takes, as the Controller measures it, up to the scheduler's 10 ms
// time slice. A goroutine that becomes runnable while a request runs on every P waits for one of them to finish
// or be preempted, however short the queue; with handlers of 1 ms that is a millisecond more, with handlers of
// 5 ms or more at GOMAXPROCS=1 it is what every arrival waits at any load, and counting it against Target alone
// read a queue the CPU did not have.
//
// Load is meant for one sampler (the Shedder's); the zero value is not usable, create it with NewSchedLatency.
type SchedLatency struct {
	target   time.Duration
	quantile float64
	read     func(dst []uint64) // the cumulative counts of the histogram
	now      func() time.Time
	// work is the owning Controller's CPU time of a request (ns), nil without a Controller: the wait behind one
	// running request, allowed beside Target.
	work *atomic.Int64

	mu      sync.Mutex
	sched   schedWindow
	primed  bool
	prevAt  time.Time
	current []uint64
}

// DefaultSchedTarget is the scheduling latency NewSchedLatency(0) counts as full load: far above what a
// process with spare CPU sees (tens of microseconds) and well below what users notice.
const DefaultSchedTarget = 7 * time.Millisecond

const (
	schedQuantile = 0.9                    // the share of goroutine waits that must stay under Target
	schedMemory   = 100 * time.Millisecond // time constant of the decaying histogram
	schedMinAbove = 4                      // events that must lie at or above the quantile
	schedMaxLoad  = 2                      // the highest load a reading reports
	schedMetric   = "/sched/latencies:seconds"
	// schedSlice is the Go scheduler's time slice: a goroutine that runs longer is preempted, so a goroutine that
	// becomes runnable waits behind one running request at most that long.
	schedSlice = 10 * time.Millisecond
)

// NewSchedLatency returns the scheduling-latency signal: load 1 when the 90th percentile of recent goroutine
// waits for a CPU reaches target. A target of 0 means DefaultSchedTarget.
func NewSchedLatency(target time.Duration) *SchedLatency {
	if target < 0 {
		panic(fmt.Sprintf("loadshed: NewSchedLatency target must be >= 0, got %v", target))
	}
	if target == 0 {
		target = DefaultSchedTarget
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
	return newSchedLatency(target, buckets, read, time.Now)
}

func newSchedLatency(target time.Duration, buckets []float64, read func([]uint64), now func() time.Time) *SchedLatency {
	n := max(len(buckets)-1, 0)
	return &SchedLatency{
		target:   target,
		quantile: schedQuantile,
		read:     read,
		now:      now,
		sched:    newSchedWindow(buckets),
		current:  make([]uint64, n),
	}
}

// Target is the latency at which the load is 1.
func (s *SchedLatency) Target() time.Duration { return s.target }

// String describes the signal, for logs and Status.
func (s *SchedLatency) String() string {
	return fmt.Sprintf("scheduler latency p%g over %v", s.quantile*100, s.target)
}

var errNoSchedMetric = errors.New("loadshed: the Go runtime has no " + schedMetric + " histogram")

// Load returns the recent scheduling-latency quantile as a fraction of Target. The first call only takes the
// baseline and returns 0.
func (s *SchedLatency) Load() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.current) == 0 {
		return 0, errNoSchedMetric
	}
	s.read(s.current)
	at := s.now()
	if !s.primed {
		s.sched.reset(s.current)
		s.primed, s.prevAt = true, at
		return 0, nil
	}
	keep := math.Exp(-float64(at.Sub(s.prevAt)) / float64(schedMemory))
	s.prevAt = at
	s.sched.add(s.current, keep)
	target := s.target
	if s.work != nil {
		target += min(time.Duration(s.work.Load()), schedSlice)
	}
	return min(s.sched.recentQuantile(s.quantile, schedMinAbove)/target.Seconds(), schedMaxLoad), nil
}

// schedWindow is a decaying histogram of the differences between successive cumulative histograms.
type schedWindow struct {
	bounds  []float64 // a representative value of each bucket, in seconds
	prev    []uint64
	decayed []float64
	total   float64
	// recentMax is the longest wait among the events of the last add (the value of the highest bucket it added
	// to), and recent how many events it added.
	recentMax, recent float64
}

// newSchedWindow takes the bucket boundaries of a runtime/metrics histogram (len(counts)+1 of them, the first
// possibly -Inf and the last +Inf). A bucket stands for its upper boundary, the open last one for its lower.
func newSchedWindow(buckets []float64) schedWindow {
	n := max(len(buckets)-1, 0)
	w := schedWindow{bounds: make([]float64, n), prev: make([]uint64, n), decayed: make([]float64, n)}
	for i := range n {
		b := buckets[i+1]
		if math.IsInf(b, 1) {
			b = buckets[i]
		}
		w.bounds[i] = max(b, 0)
	}
	return w
}

func (w *schedWindow) reset(cum []uint64) {
	copy(w.prev, cum)
	clear(w.decayed)
	w.total, w.recentMax, w.recent = 0, 0, 0
}

// add decays the window by keep and adds the events counted since the previous cumulative reading.
func (w *schedWindow) add(cum []uint64, keep float64) {
	w.total, w.recentMax, w.recent = 0, 0, 0
	for i, c := range cum {
		d := 0.0
		if c >= w.prev[i] { // a counter never goes back; if it did, count nothing new
			d = float64(c - w.prev[i])
		}
		w.prev[i] = c
		w.decayed[i] = w.decayed[i]*keep + d
		w.total += w.decayed[i]
		if d > 0 {
			w.recentMax, w.recent = w.bounds[i], w.recent+d
		}
	}
}

// recentQuantile is the window's quantile (see quantile), but no longer than the longest wait of the last add
// when it added any event. The window remembers a backlog's long waits for a while; once the goroutines that
// run wait no more (the backlog has drained, or shedding emptied it), what they waited is all there is to
// shed on. Without the cap, an idle process that has just shed everything kept reading its past backlog and
// went on shedding everything for another 100–150 ms, cycle after cycle.
func (w *schedWindow) recentQuantile(q, minAbove float64) float64 {
	v := w.quantile(q, minAbove)
	if w.recent > 0 {
		v = min(v, w.recentMax)
	}
	return v
}

// quantile returns the q-quantile of the window's events, made to rest on at least minAbove events: the highest
// bucket value with more than (1-q)·total events, and at least minAbove, at or above it; 0 when the window holds
// fewer than minAbove events.
func (w *schedWindow) quantile(q, minAbove float64) float64 {
	if !(w.total > 0) || w.total < minAbove*(1-1e-9) {
		return 0
	}
	need, above := (1-q)*w.total*(1+1e-9), 0.0 // the tolerance keeps an exact share from rounding over
	for i := len(w.decayed) - 1; i >= 0; i-- {
		above += w.decayed[i]
		if above > need && above >= minAbove*(1-1e-9) && w.decayed[i] > 0 {
			return w.bounds[i]
		}
	}
	return 0
}
