package core

import (
	"context"
	"errors"
	"math"
	"time"
)

// snapshot is what the sampler publishes for the request path: one pointer load per request.
type snapshot struct {
	load, normal, critical float64
	at                     time.Time // of the reading; zero before the first
	// wakeAt and shedAt are the counts of admitted and of rejected ordinary requests at which the request that
	// reaches one takes the next reading itself, the sampler being late for it (see pace.next); 0 for never (the
	// counts start at 1).
	wakeAt, shedAt uint64
	// limit is the in-flight limit of ordinary requests (critical ones: twice it); 0 for none.
	limit int64
	// resting tells whether the sampler waits longer than Interval before its next reading.
	resting bool
}

// run is the sampler goroutine: one reading per wait until ctx is done, the wait set by each reading (see pace).
// A done Config.Context ends the engine as Close does, so the metrics go with the sampler.
func (e *Engine) run(ctx context.Context) {
	defer close(e.done)
	defer func() {
		if e.metrics != nil {
			e.metrics.unregister()
		}
	}()
	// A ticker keeps the cadence whatever a reading costs (a sampler that waits for a CPU under overload would
	// otherwise drift later with every reading); it is reset only when the wait changes.
	wait := e.pace.interval
	t := time.NewTicker(wait)
	defer t.Stop()
	for {
		woken := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wake:
			woken = true
		}
		if next := e.read(woken); next != wait {
			wait = next
			t.Reset(wait)
		}
	}
}

// pace is the sampler's rhythm: while the load is quiet (below half of Lower) it rests, doubling its wait from
// Interval up to IdleInterval; any other reading, and one that finds the requests arriving at more than twice
// the rate of the previous wait, brings the wait back to Interval.
//
// A sampler can be late: a resting one for a surge, and any one for a CPU it does not get. Its goroutine waits
// for a CPU behind the requests' own; in a process with one P a surge of arriving requests holds it off for as
// long as the surge lasts, and the requests it admits meanwhile at the last, light load keep that CPU busy. So
// each reading also sets the counts of requests, admitted and rejected, that make the next reading due: twice
// what the last rate brings in the next wait, or in two Intervals while the sampler rests (a surge admitted at
// no more than the CPU can serve is seen within a few Intervals, not at the end of a long wait). The request
// that reaches one takes the reading itself.
type pace struct {
	interval, idle time.Duration // Config.Interval and Config.IdleInterval
	quiet          float64       // half of Config.Lower: a load below it is quiet

	wait     time.Duration // the wait before the next reading
	at       time.Time     // of the previous reading
	admitted uint64        // the count of admitted ordinary requests at it
	rejected uint64        // the count of rejected ordinary requests at it
	rate     float64       // requests per second, admitted and rejected, over the wait before it; -1 for unknown
}

func newPace(interval, idle time.Duration, lower float64) pace {
	return pace{interval: interval, idle: idle, quiet: lower / 2, wait: interval, rate: -1}
}

// rateShift is the change in the rate requests arrive at that tells a surge (a rate more than rateShift times the
// one before) or the end of an overload (less than 1/rateShift of it, see Controller): readings an Interval apart
// see the rate of a steady load move by less.
const rateShift = 2

// dueMinRequests is the fewest requests that make a reading due before its wait is over: a handful of requests
// is no surge.
const dueMinRequests = 8

// next sets the wait after a reading at now of load (smoothed) and reading (raw), given the counts of admitted
// and of rejected ordinary requests, and returns it with the counts of each at which a request takes the next
// reading (see pace; none after the first reading) and whether the sampler rests. A woken sampler, a reading
// that is not quiet, a surge (at least dueMinRequests arrived at more than twice the previous rate) or an
// IdleInterval equal to Interval reads again after Interval; otherwise the wait doubles, up to IdleInterval.
func (p *pace) next(now time.Time, admitted, rejected uint64, load, reading float64, woken bool) (
	wait time.Duration, wakeAt, shedAt uint64, resting bool) {
	elapsed := now.Sub(p.at)
	newAdmitted, newRejected := admitted-p.admitted, rejected-p.rejected
	rate := -1.0
	if !p.at.IsZero() && elapsed > 0 {
		rate = float64(newAdmitted+newRejected) / elapsed.Seconds()
	}
	surge := p.rate >= 0 && rate > rateShift*p.rate && newAdmitted+newRejected >= dueMinRequests
	wait = p.interval
	if !woken && !surge && load < p.quiet && reading < p.quiet && p.idle > p.interval {
		wait = min(2*p.wait, p.idle)
	}
	p.wait = wait
	if !p.at.IsZero() { // the first reading knows no rate: nothing is due before the sampler's next one
		horizon := min(wait, 2*p.interval)
		wakeAt = dueAt(admitted, newAdmitted, horizon, elapsed)
		shedAt = dueAt(rejected, newRejected, horizon, elapsed)
	}
	p.at, p.admitted, p.rejected, p.rate = now, admitted, rejected, rate
	return wait, wakeAt, shedAt, wait > p.interval
}

// dueAt is the count at which a reading is due after one at count: twice the requests expected in horizon at
// the rate of the arrived ones over elapsed, at least dueMinRequests.
func dueAt(count, arrived uint64, horizon, elapsed time.Duration) uint64 {
	expected := 0.0
	if elapsed > 0 {
		expected = float64(arrived) * float64(horizon) / float64(elapsed)
	}
	allowed := max(dueMinRequests, math.Ceil(2*expected))
	if allowed > 1<<62 { // no rate comes near: keep the sum from wrapping on a count of its own
		allowed = 1 << 62
	}
	at := count + uint64(allowed)
	if at == 0 { // the count wrapped onto "never"
		at = 1
	}
	return at
}

// errBadReading reports a reading that is not a finite, non-negative number.
var errBadReading = errors.New("loadshed: signal returned a reading that is not a finite number >= 0")

func validLoad(load float64) bool { return !math.IsNaN(load) && !math.IsInf(load, 0) && load >= 0 }

// logSignal says at start what the load is read from and why: each signal that gives a reason logs it (the CPU
// signal's source: a cpuacct group apart from the cpu group, no limit, a cpuset; the pressure file).
func logSignal(lg Logger, sig Signal) {
	if signalName(sig) == "custom" {
		return
	}
	if d, ok := sig.(interface{ describe() string }); ok {
		lg.Infof("loadshed: %s", d.describe())
	} else {
		lg.Infof("loadshed: load is %s", signalName(sig))
	}
	sigs := []Signal{sig}
	if c, ok := sig.(interface{ Signals() []Signal }); ok {
		sigs = c.Signals()
	}
	for _, s := range sigs {
		if r := signalReason(s); r != "" {
			lg.Infof("loadshed: %s: %s", signalName(s), r)
		}
	}
}

// Sample reads the signal once now, beside the sampler's own readings, and publishes the smoothed load: the next
// Admit decides by it. A resting sampler reads at every Interval again until the load is quiet once more.
func (e *Engine) Sample() { e.sample(false) }

// sample reads the signal once and publishes the smoothed load.
func (e *Engine) sample(first bool) {
	e.sampleMu.Lock()
	defer e.sampleMu.Unlock()
	e.sampleLocked(first, true) // the sampler's next reading comes after Interval at most
}

// read is the sampler's reading: it publishes the smoothed load and returns the wait before the next one. A
// reading taken less than half an Interval ago, by a request (see overdue) or Sample, stands for it.
func (e *Engine) read(woken bool) time.Duration {
	e.sampleMu.Lock()
	defer e.sampleMu.Unlock()
	if at := e.state.Load().at; !at.IsZero() && time.Since(at) < e.pace.interval/2 {
		return e.pace.wait
	}
	return e.sampleLocked(false, woken)
}

// overdue takes the reading a request found due (see pace): the sampler is late for it. A reading under way, by
// the sampler or another request, is enough, and a closed Engine reads no more. The sampler is then woken to
// take up the new wait, which its ticker does not know.
//
//go:noinline
func (e *Engine) overdue() {
	if !e.sampleMu.TryLock() {
		return
	}
	if e.closed {
		e.sampleMu.Unlock()
		return
	}
	e.sampleLocked(false, false) // a surge, or a load that is not quiet, ends the rest (see pace.next)
	e.sampleMu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default: // the sampler is woken already
	}
}

// sampleLocked reads the signal once, publishes the smoothed load with the pace's wake-up count and returns the
// wait before the next reading. An error keeps the last load and the pace.
func (e *Engine) sampleLocked(first, woken bool) time.Duration {
	if e.controller != nil {
		e.observeDecisions()
	}
	load, err := e.signal.Load()
	if err == nil && !validLoad(load) {
		err = errBadReading
	}
	if err != nil {
		e.samplerErrors.Add(1)
		if msg := err.Error(); msg != e.lastErr { // log each new error once, not every interval
			e.log.Warnf("loadshed: signal error, keeping the last load: %v", err)
			e.lastErr = msg
		}
		return e.pace.interval
	}
	e.lastErr = ""
	now := time.Now()
	smoothed := smooth(e.state.Load().load, load, e.smoothing, first)
	var limit int64
	if e.controller != nil {
		gated := e.gated.Load()
		limit = e.controller.nextLimit(e.InFlight(), gated-e.lastGated)
		e.lastGated = gated
	}
	// A limit keeps the sampler reading at every Interval: it is lifted only by a reading.
	wait, wakeAt, shedAt, resting := e.pace.next(now, e.normal.admitted.Load(), e.normal.rejected.Load(), smoothed,
		load, woken || first || limit > 0)
	e.publish(snapshot{load: smoothed, at: now, wakeAt: wakeAt, shedAt: shedAt, limit: limit, resting: resting})
	return wait
}

// observeDecisions tells the Controller the requests admitted, rejected and finished since the previous reading. In dry-run
// mode every request is served, so all count as admitted.
func (e *Engine) observeDecisions() {
	admitted := e.normal.admitted.Load() + e.crit.admitted.Load()
	rejected := e.normal.rejected.Load() + e.crit.rejected.Load()
	if e.dryRun {
		admitted, rejected = admitted+rejected, 0
	}
	now, finished := time.Now(), e.finished.Load()
	var elapsed time.Duration
	if !e.lastObserved.IsZero() {
		elapsed = now.Sub(e.lastObserved)
	}
	e.controller.observe(admitted-e.lastDecided[0], rejected-e.lastDecided[1], finished-e.lastFinished, elapsed)
	e.lastDecided, e.lastFinished, e.lastObserved = [2]uint64{admitted, rejected}, finished, now
}

// publish makes s, with the probabilities of its load, what the next Admit decides by.
func (e *Engine) publish(s snapshot) {
	s.normal, s.critical = e.policy.Probabilities(s.load)
	e.state.Store(&s)
}
