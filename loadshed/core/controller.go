package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Controller is the default controller: a Signal that finds the share of requests to shed, and the in-flight limit
// of the Engine it serves, from two measurements taken at every reading: the utilisation of the CPU the process
// may use (default: NewCPU) and whether its goroutines queue for a CPU (a latency signal at 1 or more; default:
// the higher of NewSchedLatency and NewRunQueue).
//
// The share holds the utilisation at Target. At every reading the share of ordinary requests admitted is
// multiplied by exp(−0.1 × e), e in [−1, 1] being the utilisation's relative excess over Target (u/Target − 1), or
// the latency's excess over 1 if that is larger and the queue lasts two readings, unless the process's quota
// throttled it in that reading while it used less than Target. A quota is spent per period (100 ms by default); a
// process that spends it early is frozen for the rest of the period, and wakes up to a queue of what arrived
// meanwhile: that queue is the quota's, and shedding more would not shorten it. Any other lasting queue below
// Target is a process that gets less CPU than it may use (busy neighbours): what it gets is then full. Holding
// the utilisation just under the quota keeps the process from being frozen. A run queue among the latency
// signals counts by the share of the requests decided since the previous reading that were admitted (see
// RunQueue; the Engine tells it, and without requests it counts in full): the goroutines of the requests about to
// be rejected are in it too, and shedding more cannot shorten that part. Two readings move the share at once
// instead of by a step: the end of an overload (see liftBy) and its onset (see surgeFit).
//
// The in-flight limit bounds the queue. Shedding a share at random cannot: the requests it admits still arrive
// at random, and a CPU kept busy by random arrivals has a queue whose length grows without bound as it
// approaches full use (at 97 % use, the mean wait is about 16 times the service time). A limit on the requests
// in flight admits a request only when the CPU has room for it, so the CPU stays busy and the requests admitted
// wait behind at most the limit. The limit follows the queue, as TCP's window follows losses:
//   - a reading that sees a queue halves it (from the requests in flight, if fewer), down to the CPUs the process
//     may use, rounded up: it does not come back until the queue is gone;
//   - a reading after which the limit rejected requests, with no queue and the utilisation under Target, raises
//     it by a quarter (at least one): the CPU had room for more;
//   - a reading after which it rejected nothing, with no queue, lifts it: the process is not overloaded.
//
// The limit needs no knowledge of what a request costs: a handler that waits on I/O holds a request in flight
// without using a CPU, so no queue forms and the limit rises until one does or the limit stops rejecting.
//
// Its load is the share placed on the shedder's bands, so that the probability (load − Lower)/(Upper − Lower)
// is what it sheds: a share of 0.4 reads Lower + 0.4 × (Upper − Lower). A share above 1 sheds every ordinary
// request and moves on through [CriticalLower, CriticalUpper], up to 2. A share of 0 reads the utilisation (or
// the latency, if higher) up to Lower, so that Status shows the process's load while it sheds nothing and the
// sampler can rest. The Engine gives a Controller its bands and does not smooth its load. Each Load is one step:
// the gain is per reading, at the Engine's Interval.
//
// The zero value is not usable: create it with NewController.
type Controller struct {
	util, latency Signal
	target        float64
	names         []string

	mu     sync.Mutex
	policy Policy
	share  float64
	// admit is the share of ordinary requests admitted, in [settleFloor, 1]; crit the share of critical ones
	// shed, in [0, 1], which grows only while admit is at its floor.
	admit, crit float64
	// used is the last utilisation (the latency's load without one); queued tells whether the last reading
	// saw a queue. limit is the in-flight limit, 0 for none.
	used   float64
	queued bool
	limit  int64
	last   []Reading
	// admitted is the share of the requests decided since the previous reading that were admitted
	// (math.Float64bits), 1 when none was; the run queues among the signals count by it.
	admitted atomic.Uint64
	// finished and elapsed are the requests whose handlers returned since the previous reading and the time
	// since it, as the Engine last told; work is the CPU time a request takes (an average over recent readings,
	// in ns, 0 before the first), which the scheduling latencies among the signals allow beside their target.
	finished uint64
	elapsed  time.Duration
	work     atomic.Int64
	// decided is the requests decided since the previous reading, as the Engine last told; rate their average
	// rate per second over the readings before (see arrivals), -1 before the first.
	decided uint64
	rate    float64
	// runnable reads the runtime's count of runnable goroutines; waiting is its last value, -1 before the first
	// (see arrived).
	runnable func() (uint64, bool)
	waiting  float64
	// thawed tells whether the quota throttled the process in the previous reading (see surgeFit).
	thawed bool
}

// The defaults of NewController.
const (
	// DefaultControlTarget is the utilisation a Controller holds the process at.
	DefaultControlTarget = 0.97
	// settleGain is the share moved per reading per unit of utilisation above or below Target: a process at
	// twice its quota sheds 10 % more at every reading; one at half of Target lets 5 % more in.
	settleGain  = 0.1
	settleFloor = 0.01 // the smallest share of ordinary requests admitted: below it, all are shed
	// readingWeight is the weight of a new reading in the Controller's averages: the CPU time a request takes
	// and the rate requests arrive at.
	readingWeight = 0.25
)

// controllerDefaultPolicy is the band a Controller uses until an Engine gives it its own: the adapters' defaults.
var controllerDefaultPolicy = Policy{Lower: 0.90, Upper: 0.95, CriticalLower: 0.98, CriticalUpper: 1.0}

// NewController returns a Controller over a utilisation signal and a latency signal (nil: none, and no in-flight
// limit). target is the utilisation it holds the process at, in (0, 2]; 0 means DefaultControlTarget. It panics
// on a nil utilisation or a target out of range.
func NewController(utilisation, latency Signal, target float64) *Controller {
	if utilisation == nil {
		panic("loadshed: NewController utilisation signal is nil")
	}
	if target == 0 {
		target = DefaultControlTarget
	}
	if !(target > 0) || target > 2 {
		panic(fmt.Sprintf("loadshed: NewController target must be in (0, 2], got %v", target))
	}
	s := &Controller{util: utilisation, latency: latency, target: target, policy: controllerDefaultPolicy, admit: 1,
		rate: -1, runnable: runnableReader(), waiting: -1}
	s.names, s.last = newReadings(s.Signals())
	s.admitted.Store(math.Float64bits(1))
	s.bindLatencies(latency)
	return s
}

// bindLatencies has every RunQueue in sig (itself, or within a Max) count its queue by the share of requests the
// Controller admits, and every SchedLatency allow the CPU time of a request beside its target.
func (s *Controller) bindLatencies(sig Signal) {
	switch q := sig.(type) {
	case *RunQueue:
		q.mu.Lock()
		q.admitted = &s.admitted
		q.mu.Unlock()
	case *SchedLatency:
		q.mu.Lock()
		q.work = &s.work
		q.mu.Unlock()
	case *Max:
		for _, inner := range q.signals {
			s.bindLatencies(inner)
		}
	}
}

// DefaultSignal is the Signal of a Config without one: a Controller over CPU utilisation (NewCPU(cpus)) and, as its
// latency, the higher of scheduling latency (NewSchedLatency(0)) and the run queue (NewRunQueue(0)). Utilisation
// tells it when the process uses what it may; latency when its goroutines queue for a CPU they do not get: a
// backlog inside a quota, neighbours taking the CPU, or too small a GOMAXPROCS. The run queue sees that queue as
// soon as it forms, the scheduling latency once its goroutines have waited.
// A Config's Target sets its target (0: DefaultControlTarget).
func DefaultSignal(cpus float64) *Controller { return defaultSignal(cpus, 0) }

func defaultSignal(cpus, target float64) *Controller {
	return NewController(NewCPU(cpus), NewMax(NewSchedLatency(0), NewRunQueue(0)), target)
}

// Target is the utilisation the Controller holds the process at.
func (s *Controller) Target() float64 { return s.target }

// Share is the share of requests the Controller sheds now: in [0, 1] for ordinary requests, above 1 also critical
// ones.
func (s *Controller) Share() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.share
}

// Limit is the in-flight limit the Controller set at its last reading: 0 for none.
func (s *Controller) Limit() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

// Signals returns the utilisation signal and, if any, the latency signal.
func (s *Controller) Signals() []Signal {
	if s.latency == nil {
		return []Signal{s.util}
	}
	return []Signal{s.util, s.latency}
}

// Readings returns each signal's last load; a latency signal that combines others (a Max) is listed by its
// parts.
func (s *Controller) Readings() []Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Reading(nil), s.last...)
	if c, ok := s.latency.(interface{ Readings() []Reading }); ok {
		out = append(out[:1], c.Readings()...)
	}
	return out
}

// String describes the signal, for logs and Status.
func (s *Controller) String() string {
	return fmt.Sprintf("settled at %g of %s", s.target, strings.Join(s.names, ", beside "))
}

// describe says in plain words what the Controller does, for the log line at start; String names it for Status.
func (s *Controller) describe() string {
	out := fmt.Sprintf("sheds the share of requests that keeps this process's CPU use at %s of what it may use (%s)",
		strconv.FormatFloat(s.target*100, 'g', 4, 64)+"%", s.names[0])
	if len(s.names) > 1 {
		out += fmt.Sprintf(", and limits the requests in flight while its goroutines wait for a CPU (%s)", s.names[1])
	}
	return out
}

// bind gives the Controller the Engine's bands.
func (s *Controller) bind(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// Load reads both signals, moves the share and returns it as a load on the bands. It fails only when every
// signal does; a failed signal is left out of that step.
func (s *Controller) Load() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	util, utilErr := readInto(&s.last[0], s.util)
	if utilErr == nil {
		s.learnWork(util) // before the latency reading, which allows for it
	}
	lat, latOK := 0.0, false
	if s.latency != nil {
		var latErr error
		lat, latErr = readInto(&s.last[1], s.latency)
		if latOK = latErr == nil; !latOK && utilErr != nil {
			return 0, errors.Join(utilErr, latErr)
		}
	}
	if utilErr != nil && !latOK {
		return 0, utilErr
	}
	var reading, e float64
	if utilErr == nil {
		s.used, reading, e = util, util, util/s.target-1
	} else { // without a utilisation, the latency stands in for it
		s.used, e = lat, lat-1
	}
	queued := latOK && lat >= 1
	throttled := s.throttled()
	if queued && s.queued && (s.used >= s.target || !throttled) {
		e = max(e, lat-1)
	}
	s.queued = queued
	rate, before := s.arrivals()
	arrived, grew := s.arrived(rate)
	thawed := s.thawed
	s.thawed = throttled
	if f := s.liftBy(util, utilErr == nil && !queued && !throttled, rate, before); f > 1 {
		s.lift(f)
	} else if fit := s.surgeFit(util, utilErr == nil && !throttled && !thawed, arrived, grew, before); fit > 0 {
		s.cut(fit)
	} else {
		s.step(min(max(e, -1), 1))
	}
	if latOK {
		reading = max(reading, lat)
	}
	return s.loadOf(s.share, reading), nil
}

// step moves the admitted share by the error e in [-1, 1]: multiplied by exp(−Gain × e), so that the same
// error moves it by the same fraction of itself whether it admits most requests or few. Below settleFloor every
// ordinary request is shed and the error moves the share of critical requests shed instead, by Gain × e.
func (s *Controller) step(e float64) {
	switch {
	case e > 0 && s.admit <= settleFloor || e < 0 && s.crit > 0:
		s.crit = min(max(s.crit+settleGain*e, 0), 1)
	default:
		s.admit = min(max(s.admit*math.Exp(-settleGain*e), settleFloor), 1)
	}
	s.setShare()
}

// setShare derives the share shed from the shares admitted and critical shed.
func (s *Controller) setShare() {
	s.share = 1 - s.admit + s.crit
	if s.admit <= settleFloor {
		s.share = 1 + s.crit
	}
}

// arrivals is the rate requests arrived at since the previous reading (those decided, per second) and their
// average rate over the readings before it; either is -1 while unknown (no Engine tells the Controller its
// decisions, or no time elapsed). It adds this reading's rate to the average.
func (s *Controller) arrivals() (rate, before float64) {
	rate, before = -1, s.rate
	if s.elapsed > 0 {
		rate = float64(s.decided) / s.elapsed.Seconds()
		if s.rate < 0 {
			s.rate = rate
		} else {
			s.rate += readingWeight * (rate - s.rate)
		}
	}
	return rate, before
}

// liftBy is the factor a reading lifts the admitted share by, 1 or less for none. Far fewer requests arriving is
// the end of an overload, which the ordinary step meets only by a tenth of the shortfall per reading: a process
// that sheds at 3 times its capacity and then gets half of it uses a sixth of its CPU and sheds for hundreds of
// milliseconds. So a reading that finds the process using less than half of Target (clear of a reading's noise),
// with no queue and no throttling (a CPU it does not get, or a quota's freeze, is not idle), while the requests
// arrive at less than 1/rateShift of the rate they did, raises the share admitted by the fall of that rate, up to
// what would hold Target: the requests admitted per second stay what the CPU served before, at most. A smaller
// fall is the rate's own noise from one reading to the next, as in a process that shares its CPUs with a busier
// one and still sheds: lifting there admits what the next readings must shed again.
func (s *Controller) liftBy(util float64, idle bool, rate, before float64) float64 {
	shedding := s.admit < 1 || s.crit > 0
	if !idle || !shedding || !(util < s.target/2) || rate < 0 || !(rateShift*rate < before) {
		return 1
	}
	f := s.target / util // +Inf for a CPU at rest
	if rate > 0 {
		f = min(f, before/rate)
	}
	return f
}

// arrived is the rate requests arrived at since the previous reading, -1 while unknown, and the growth of the
// run queue over that reading, in goroutines (0 while unknown): the rate of those decided (rate, from arrivals)
// and of the growth of the run queue. A request is decided only once its goroutine runs, so while every P is
// busy the requests decided per second are what the CPU gets through, whatever arrives; the arrivals it has not
// reached yet wait as runnable goroutines. At GOMAXPROCS=1 a 3× overload is decided at about the capacity in
// its first readings, and the rest of it shows only in the run queue, growing by two requests for every one
// served.
func (s *Controller) arrived(rate float64) (arrived, grew float64) {
	var now float64
	n, ok := s.runnable()
	if ok {
		now = float64(n)
	}
	if ok && s.waiting >= 0 && s.elapsed > 0 {
		grew = now - s.waiting
	}
	s.waiting = -1
	if ok {
		s.waiting = now
	}
	if rate < 0 {
		return -1, grew
	}
	return max(rate+grew/s.elapsed.Seconds(), 0), grew
}

// surgeFit is the share of ordinary requests a reading admits at the onset of an overload, 0 for none: the share
// of the arrivals that the CPU serves at Target, the requests that finished in the reading over those that
// arrived in it, times Target over the utilisation they took. The ordinary step cuts the share by at most a
// tenth per reading: at 3× the capacity it takes 11 readings (220 ms) to reach the third that fits, and at
// GOMAXPROCS=1, where no in-flight limit acts, the queue grows by two requests for each one served meanwhile
// (the first second's p99 was 164–1,691 ms, 80 times the unloaded one or more). The onset is the mirror of the
// end (see liftBy). It is a reading of a process that sheds at most one step's worth (it admits e^−Gain of
// ordinary requests or more, and no critical one is shed), with the CPU at half of Target or more (counts: read,
// and no quota's freeze in it or the one before), in which the run queue grew by dueMinRequests goroutines or
// more, the requests arrive at more than rateShift times their average rate, and what fits is less than
// 1/rateShift of what is admitted. It cuts the share at once to what fits. Each condition excludes a neighbour
// that is no overload of the CPU:
//   - A CPU under half of Target has room, whatever arrives (the end's own threshold).
//   - A run queue that does not grow is no queue for the CPU: requests that wait on I/O, or a burst of them,
//     are decided and sleep, and they finish later than they arrive; a process starting up, whose own work
//     takes the CPU, serves its first requests as they come.
//   - A smaller shift of the rate is the readings' own noise, which the ordinary step follows.
//   - A process that already sheds is past its onset: there the arrivals' estimate is what wrongs it.
//   - A quota's freeze: the process's run queue jumps whenever its threads were stopped (a freeze, a busy host, a
//     long pause) and its netpoller makes runnable at once what arrived meanwhile, in the reading after a
//     freeze. Cut on those jumps, two Ps on a 1-CPU quota at 2× used 0.81–0.96 of the quota, not 0.98.
//
// The requests served come from the reading itself, not from the average CPU time of a request: that average
// holds what the process's CPU cost when few requests shared it, as at its start.
func (s *Controller) surgeFit(util float64, counts bool, arrived, grew, before float64) float64 {
	_, isCPU := s.util.(*CPU)
	onset := s.crit == 0 && s.admit >= math.Exp(-settleGain)
	if !onset || !counts || !isCPU || !(util >= s.target/2) || s.finished == 0 ||
		!(grew >= dueMinRequests) || !(before > 0) || !(arrived > rateShift*before) {
		return 0
	}
	fit := s.target / util * float64(s.finished) / (arrived * s.elapsed.Seconds())
	if !(rateShift*fit < s.admit) {
		return 0
	}
	return max(fit, settleFloor)
}

// cut lowers the admitted share to fit, which is less than it.
func (s *Controller) cut(fit float64) {
	s.admit = min(s.admit, fit)
	s.setShare()
}

// lift raises the admitted share by f > 1, critical requests shed no more.
func (s *Controller) lift(f float64) {
	s.crit = 0
	s.admit = min(s.admit*f, 1)
	s.share = 1 - s.admit
}

// observe tells the Controller what happened since its previous reading, before it reads again: how many requests
// were admitted and rejected (the run queues among its signals count by the share admitted, or in full when no
// request was decided), how many finished, and how long ago that reading was (with the utilisation it reads, they
// give the CPU time a request takes; 0 before the first). The Engine calls it; a Controller read by anything else
// counts its run queues in full and learns no CPU time of a request.
func (s *Controller) observe(admitted, rejected, finished uint64, elapsed time.Duration) {
	share := 1.0
	if n := admitted + rejected; n > 0 {
		share = float64(admitted) / float64(n)
	}
	s.admitted.Store(math.Float64bits(share))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decided, s.finished, s.elapsed = admitted+rejected, finished, elapsed
}

// learnWork averages the CPU time a request took over the last reading, the CPU a utilisation of util stands for
// (its capacity, in CPUs) over the time since the previous reading shared among the requests that finished in
// it: the time any goroutine waits behind one running request. A reading in which none finished, or a
// utilisation that is not the CPU's, teaches nothing. The CPU the rejections took counts in it too, a few
// percent of a served request's.
func (s *Controller) learnWork(util float64) {
	c, ok := s.util.(*CPU)
	if !ok || s.finished == 0 || s.elapsed <= 0 {
		return
	}
	sample := util * c.Capacity() * float64(s.elapsed) / float64(s.finished)
	if prev := s.work.Load(); prev > 0 {
		sample = float64(prev) + readingWeight*(sample-float64(prev))
	}
	s.work.Store(int64(sample))
}

// Work is the CPU time a request takes, as the Controller last averaged it: 0 before any request finished, or
// when its utilisation is not a CPU signal.
func (s *Controller) Work() time.Duration { return time.Duration(s.work.Load()) }

// throttled tells whether a quota throttled the process over the last reading: then a queue below the target is
// the wake-up to what arrived while it was stopped, not a CPU it cannot get.
func (s *Controller) throttled() bool {
	c, ok := s.util.(interface{ Throttled() bool })
	return ok && c.Throttled()
}

// nextLimit moves the in-flight limit after a reading, given the requests in flight now and those the limit
// rejected since the previous reading, and returns it (0: none).
func (s *Controller) nextLimit(inFlight int64, gated uint64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.latency == nil:
		s.limit = 0
	case s.queued:
		base := inFlight
		if s.limit > 0 {
			base = min(base, s.limit)
		}
		s.limit = max(base/2, s.minLimit())
	case gated == 0:
		s.limit = 0
	case s.used < s.target:
		s.limit = max(s.limit+1, s.limit+s.limit/4)
	}
	return s.limit
}

// minLimit is the lowest in-flight limit: the CPUs the process may use (a CPU utilisation's capacity, at most
// GOMAXPROCS), rounded up; 1 for another utilisation signal.
func (s *Controller) minLimit() int64 {
	cpus := float64(runtime.GOMAXPROCS(0))
	if c, ok := s.util.(*CPU); ok {
		cpus = min(cpus, c.Capacity())
	} else {
		cpus = 1
	}
	return max(int64(math.Ceil(cpus)), 1)
}

// loadOf places a share on the bands: the reading up to Lower at 0, then [Lower, Upper] for ordinary requests,
// then [CriticalLower, CriticalUpper].
func (s *Controller) loadOf(share, reading float64) float64 {
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

// bindController gives the bands to sig if it is a Controller, or to each Controller it combines, and reports whether sig
// itself is one.
func bindController(sig Signal, p Policy) bool {
	switch s := sig.(type) {
	case *Controller:
		s.bind(p)
		return true
	case *Max:
		for _, inner := range s.signals {
			bindController(inner, p)
		}
	}
	return false
}
