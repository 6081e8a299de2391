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
}

// run is the sampler goroutine: one reading per interval until ctx is done. A done Config.Context ends the
// engine as Close does, so the metrics go with the sampler.
func (e *Engine) run(ctx context.Context) {
	defer close(e.done)
	defer func() {
		if e.metrics != nil {
			e.metrics.unregister()
		}
	}()
	t := time.NewTicker(e.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.sample(false)
		}
	}
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
	lg.Infof("loadshed: load is %s", signalName(sig))
	sigs := []Signal{sig}
	if c, ok := sig.(*Combined); ok {
		sigs = c.Signals()
	}
	for _, s := range sigs {
		if r := signalReason(s); r != "" {
			lg.Infof("loadshed: %s: %s", signalName(s), r)
		}
	}
}

// Sample reads the signal once now, beside the sampler's own readings, and publishes the smoothed load: the next
// Admit decides by it.
func (e *Engine) Sample() { e.sample(false) }

// sample reads the signal once and publishes the smoothed load.
func (e *Engine) sample(first bool) {
	e.sampleMu.Lock()
	defer e.sampleMu.Unlock()
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
		return
	}
	e.lastErr = ""
	e.publish(smooth(e.state.Load().load, load, e.smoothing, first), time.Now())
}

func (e *Engine) publish(load float64, at time.Time) {
	normal, critical := e.policy.Probabilities(load)
	e.state.Store(&snapshot{load: load, normal: normal, critical: critical, at: at})
}
