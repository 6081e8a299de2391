package loadshed

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/gofiber/fiber/v2/log"
)

// snapshot is what the sampler publishes for the request path: one pointer load per request.
type snapshot struct {
	load, normal, critical float64
	at                     time.Time // of the reading; zero before the first
}

// run is the sampler goroutine: one reading per interval until ctx is done.
func (s *Shedder) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sample(false)
		}
	}
}

// errBadReading reports a reading that is not a finite, non-negative number.
var errBadReading = errors.New("loadshed: signal returned a reading that is not a finite number >= 0")

func validLoad(load float64) bool { return !math.IsNaN(load) && !math.IsInf(load, 0) && load >= 0 }

// logSignal says at start what the load is read from and why: each signal that gives a reason logs it (the CPU
// signal's source: a cpuacct group apart from the cpu group, no limit, a cpuset; the pressure file).
func logSignal(sig Signal) {
	if signalName(sig) == "custom" {
		return
	}
	log.Infof("loadshed: load is %s", signalName(sig))
	sigs := []Signal{sig}
	if c, ok := sig.(*Combined); ok {
		sigs = c.Signals()
	}
	for _, s := range sigs {
		if r := signalReason(s); r != "" {
			log.Infof("loadshed: %s: %s", signalName(s), r)
		}
	}
}

// sample reads the signal once and publishes the smoothed load. Only NewShedder and the sampler goroutine call it.
func (s *Shedder) sample(first bool) {
	load, err := s.signal.Load()
	if err == nil && !validLoad(load) {
		err = errBadReading
	}
	if err != nil {
		s.samplerErrors.Add(1)
		if msg := err.Error(); msg != s.lastErr { // log each new error once, not every interval
			log.Warnf("loadshed: signal error, keeping the last load: %v", err)
			s.lastErr = msg
		}
		return
	}
	s.lastErr = ""
	s.publish(smooth(s.state.Load().load, load, s.smoothing, first), time.Now())
}

func (s *Shedder) publish(load float64, at time.Time) {
	normal, critical := s.policy.Probabilities(load)
	s.state.Store(&snapshot{load: load, normal: normal, critical: critical, at: at})
}
