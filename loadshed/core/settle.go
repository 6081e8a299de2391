package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
)

// Settled is the default load shedder's controller: a Signal that finds the share of requests to shed by
// holding the process's own queue for a CPU at a target, instead of reading a probability off one measurement.
//
// What it holds: q = utilisation × wait, where utilisation is the CPU the process uses over the CPU it may use
// (NewCPU: its cgroup's limit, else its own CPUs) and wait is how long its goroutines wait for a CPU over that
// signal's target (NewQueueWait: the mean wait over 5 ms). The product is the wait that the process's own work
// causes: an idle process beside busy neighbours waits at every wake-up but uses almost nothing, so q stays
// near 0; a handler that mostly sleeps keeps nothing runnable, so q stays near 0; a process whose own requests
// outrun its CPU uses all of it and queues them, so q grows with its backlog. Settled sheds just enough to
// hold q at 1: a short queue, which keeps every CPU the process may use busy (so goodput is what those CPUs can
// serve) while an admitted request waits about the wait signal's target.
//
// How: it controls the admitted share a (1 − the shed share) in logarithm, a proportional-integral step per
// reading (the Engine's Interval):
//
//	ln a  ←  ln a − Integral·e − Proportional·(e − e_previous),   e = min(q/target, 1 + MaxExcess) − 1
//
// Why it is stable everywhere: the queue grows by the admitted excess over what the CPU serves, so between two
// readings q moves by (a·offered/capacity − 1) × Interval/wait target, whatever the capacity, the cost of a
// request or the overload factor. In the logarithm of a, that is a loop of constant gain, and the proportional
// step (0.25 at the defaults) cancels most of an admitted excess in one reading without reversing it; the
// integral step (a quarter of it) then takes the standing queue to its target. A 1.2× overload and a 10× one
// settle alike, at a = 0.83 and a = 0.1. When the process needs no shedding, q stays under target and a stays
// at 1: nothing is shed while the CPUs it may use sit idle.
//
// Its target (NewSettled's third argument) scales the queue held; a utilisation above the target's share of
// the CPU (a target below 1) also counts as excess, so NewSettled(cpu, wait, 0.8) keeps 20 % of the CPU
// spare. Below a = 1 % of ordinary requests it goes on into critical ones (the share above 1).
//
// Its load is that share placed on the shedder's bands, so that the probability (load − Lower)/(Upper − Lower)
// is what it sheds: a share of 0.4 reads Lower + 0.4 × (Upper − Lower). A share of 0 reads the utilisation up to
// Lower, so that Status shows the process's load while it sheds nothing and the sampler can rest. The Engine
// gives a Settled its bands and does not smooth its load.
//
// The zero value is not usable: create it with NewSettled.
type Settled struct {
	util, latency Signal
	target        float64
	names         []string

	mu      sync.Mutex
	policy  Policy
	logA    float64 // the logarithm of the admitted share, in [ln settleMinAdmit, 0]
	errPrev float64 // the previous reading's error
	// queuePrev is the previous reading's queue (utilisation × wait over target); utilAvg the recent utilisation
	queuePrev, utilAvg float64
	primed             bool
	last               []Reading
}

// The constants of the controller.
const (
	// DefaultSettleTarget is the queue a Settled holds, in units of its wait signal's target; below 1 it is
	// also the share of its CPU it lets the process use.
	DefaultSettleTarget = 1.0
	settleProportional  = 0.15 // of the error's change, per reading, in the logarithm of the admitted share
	settleIntegral      = 0.03 // of the error, per reading
	settleMaxExcess     = 3    // the integral step's error is capped at 3 (a queue four times the target)
	settleMaxStep       = 1.4  // the most one reading moves the logarithm of the admitted share: a factor of 4
	settleUtilExcess    = 10   // a utilisation 10 % above a target below 1 counts as a queue at twice the target
	settleUtilWeight    = 0.5  // of each reading in the recent utilisation: a memory of about 2 readings
	settleRelease       = 0.5  // of the spare CPU's room, admitted per reading while the queue is below its target
	settleMaxGrowth     = 16   // utilisation readings below 1/16 count as 1/16
	settleQuotaHeadroom = 0.97 // the share of a quota below GOMAXPROCS that the process is held under
	settleMinAdmit      = 0.0001
	settleCriticalAt    = 0.01 // below this share of ordinary requests admitted, critical ones are shed too
)

// settleDefaultPolicy is the band a Settled uses until an Engine gives it its own: the adapters' defaults.
var settleDefaultPolicy = Policy{Lower: 0.90, Upper: 0.95, CriticalLower: 0.98, CriticalUpper: 1.0}

// NewSettled returns a Settled over a utilisation signal and a wait signal (nil: the utilisation alone, held
// under target). target is the queue it holds in units of the wait signal's target, in (0, 2]; 0 means
// DefaultSettleTarget; below 1 it also holds the utilisation under target. It panics on a nil utilisation or a
// target out of range.
func NewSettled(utilisation, latency Signal, target float64) *Settled {
	if utilisation == nil {
		panic("loadshed: NewSettled utilisation signal is nil")
	}
	if target == 0 {
		target = DefaultSettleTarget
	}
	if !(target > 0) || target > 2 {
		panic(fmt.Sprintf("loadshed: NewSettled target must be in (0, 2], got %v", target))
	}
	s := &Settled{util: utilisation, latency: latency, target: target, policy: settleDefaultPolicy}
	s.names, s.last = newReadings(s.Signals())
	return s
}

// DefaultSignal is the Signal of a Config without one: a Settled over CPU utilisation (NewCPU(cpus)) and the
// mean wait for a CPU (NewQueueWait(0)), holding the process's own queue at 5 ms of wait.
func DefaultSignal(cpus float64) *Settled {
	return NewSettled(NewCPU(cpus), NewQueueWait(0), 0)
}

// Target is the queue the Settled holds, in units of its wait signal's target.
func (s *Settled) Target() float64 { return s.target }

// Share is the share of requests the Settled sheds now: in [0, 1] for ordinary requests, above 1 also critical
// ones.
func (s *Settled) Share() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.share()
}

func (s *Settled) share() float64 {
	a := math.Exp(s.logA)
	if s.logA <= math.Log(settleMinAdmit) {
		return 2
	}
	if a >= settleCriticalAt {
		return 1 - a
	}
	return 2 - math.Log(a/settleMinAdmit)/math.Log(settleCriticalAt/settleMinAdmit)
}

// Signals returns the utilisation signal and, if any, the wait signal.
func (s *Settled) Signals() []Signal {
	if s.latency == nil {
		return []Signal{s.util}
	}
	return []Signal{s.util, s.latency}
}

// Readings returns each signal's last load; a wait signal that combines others (a Max) is listed by its parts.
func (s *Settled) Readings() []Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Reading(nil), s.last...)
	if c, ok := s.latency.(interface{ Readings() []Reading }); ok {
		out = append(out[:1], c.Readings()...)
	}
	return out
}

// String describes the signal, for logs and Status.
func (s *Settled) String() string {
	if s.latency == nil {
		return fmt.Sprintf("settled: %s held under %g", s.names[0], s.target)
	}
	return fmt.Sprintf("settled: the process's own queue (%s times %s) held at %g", s.names[0], s.names[1], s.target)
}

// describe says in plain words what the Settled does, for the log line at start; String names it for Status.
func (s *Settled) describe() string {
	if len(s.names) < 2 {
		return fmt.Sprintf("sheds the share of requests that keeps this process's CPU use under %s of what it may use (%s)",
			strconv.FormatFloat(s.target*100, 'g', 4, 64)+"%", s.names[0])
	}
	return fmt.Sprintf("sheds just enough requests to keep this process's own queue for a CPU short: its CPU use (%s) "+
		"times how long its goroutines wait for a CPU (%s), held at %g; nothing while its CPUs have room", s.names[0], s.names[1], s.target)
}

// bind gives the Settled the Engine's bands.
func (s *Settled) bind(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// Load reads both signals, takes one step of the controller and returns the share as a load on the bands. It
// fails only when every signal does; a failed signal is left out of that step.
func (s *Settled) Load() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	util, utilErr := readInto(&s.last[0], s.util)
	wait, waitOK := 0.0, false
	if s.latency != nil {
		var waitErr error
		wait, waitErr = readInto(&s.last[1], s.latency)
		if waitOK = waitErr == nil; !waitOK && utilErr != nil {
			return 0, errors.Join(utilErr, waitErr)
		}
	}
	if utilErr != nil && !waitOK {
		return 0, utilErr
	}
	reading := util
	if utilErr == nil {
		// The utilisation over the last few readings: one reading of a quota's usage flips between 0 (throttled
		// for the whole reading) and well above 1 (the catch-up after it).
		if !s.primed {
			s.utilAvg = util
		}
		s.utilAvg += settleUtilWeight * (util - s.utilAvg)
		util = s.utilAvg
	}
	e := s.excess(util, utilErr == nil, wait, waitOK)
	if !s.primed { // the first reading has no previous error: no proportional step yet
		s.errPrev, s.primed = e, true
	}
	step := settleProportional*(e-s.errPrev) + settleIntegral*min(e, settleMaxExcess)
	if e < 0 && utilErr == nil && util < 1 {
		// Below its target queue with CPU to spare, the process can take 1/util times what it admits: half of
		// that gap is admitted at once, so a shedder that overshot (or an overload that ended) gives the CPU back
		// within a few readings instead of creeping up.
		step = min(step, settleRelease*(-e)*math.Log(max(util, 1/settleMaxGrowth)))
	}
	s.logA -= min(max(step, -settleMaxStep), settleMaxStep)
	s.logA = min(max(s.logA, math.Log(settleMinAdmit)), 0)
	s.errPrev = e
	if utilErr != nil {
		reading = wait
	}
	return s.loadOf(s.share(), reading), nil
}

// excess is the controller's error: the process's own queue (utilisation × wait) over target, less 1, capped
// at settleMaxExcess and at least -1; a utilisation above a target below 1 counts too.
func (s *Settled) excess(util float64, haveUtil bool, wait float64, haveWait bool) float64 {
	var q float64
	switch {
	case haveUtil && haveWait:
		q = util * wait / s.target
	case haveWait: // without a utilisation, the wait alone
		q = wait / s.target
	}
	// The queue that stands: the lower of this reading's and the last one's. A stall that one reading sees and
	// the next does not (a quota's throttling at a burst, a garbage-collection pause, a neighbour's time slice) is
	// not a queue the process's own arrivals keep up; shedding on it sheds what the CPU could serve.
	q, s.queuePrev = min(q, s.queuePrev), q
	e := q - 1
	if haveUtil && (s.target < 1 || !haveWait) {
		e = max(e, settleUtilExcess*(util/min(s.target, 1)-1))
	}
	if haveUtil && haveWait && s.quotaBelowProcs() {
		// A quota smaller than GOMAXPROCS lets the process's threads use it up before the kernel's period
		// ends; the group is then throttled, and every request in flight stalls for the rest of the period,
		// a wait no goroutine queue shows. Where a quota binds so, the utilisation is held under
		// settleQuotaHeadroom of it as well.
		e = max(e, settleUtilExcess*(util/settleQuotaHeadroom-1))
	}
	return max(e, -1)
}

// quotaBelowProcs reports whether the utilisation signal's CPU capacity is a limit below GOMAXPROCS.
func (s *Settled) quotaBelowProcs() bool {
	c, ok := s.util.(interface{ Capacity() float64 })
	return ok && c.Capacity() < float64(runtime.GOMAXPROCS(0))
}

// loadOf places a share on the bands: the reading up to Lower at 0, then [Lower, Upper] for ordinary requests,
// then [CriticalLower, CriticalUpper].
func (s *Settled) loadOf(share, reading float64) float64 {
	p := s.policy
	switch {
	case share <= 0:
		return min(reading, p.Lower)
	case share <= 1:
		return p.Lower + share*(p.Upper-p.Lower)
	default:
		return p.CriticalLower + (share-1)*(p.CriticalUpper-p.CriticalLower)
	}
}

// bindSettled gives the bands to sig if it is a Settled, or to each Settled it combines, and reports whether sig
// itself is one.
func bindSettled(sig Signal, p Policy) bool {
	switch s := sig.(type) {
	case *Settled:
		s.bind(p)
		return true
	case *Combined:
		for _, inner := range s.signals {
			bindSettled(inner, p)
		}
	}
	return false
}
