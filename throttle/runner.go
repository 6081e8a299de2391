package throttle

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2/log"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// evaluator evaluates a signal once within ctx.
type evaluator func(ctx context.Context) (Verdict, error)

// queryEvaluator evaluates a PromQL instant query at the server's current time.
func queryEvaluator(prom promv1.API, query string) evaluator {
	return func(ctx context.Context) (Verdict, error) {
		v, _, _, err := prom.Query(ctx, query, time.Time{})
		return Classify(v, err)
	}
}

// funcEvaluator evaluates an in-process signal; a panic in it counts as a failed evaluation.
func funcEvaluator(f func(context.Context) (bool, error)) evaluator {
	return func(ctx context.Context) (v Verdict, err error) {
		defer func() {
			if p := recover(); p != nil {
				v, err = VerdictError, fmt.Errorf("throttle: signal function panicked: %v", p)
			}
		}()
		firing, err := f(ctx)
		switch {
		case err != nil: // a function that queries Prometheus itself gets the same reading of its errors
			return errorVerdict(err), err
		case firing:
			return VerdictFiring, nil
		}
		return VerdictFalse, nil
	}
}

// signalRunner evaluates one signal on its own goroutine, one evaluation at a time, and hands each result to
// its owner, which applies it to the window.
type signalRunner struct {
	sig      Signal
	eval     evaluator
	owner    *Throttler
	duration prometheus.Observer // nil without metrics

	// tracker and the log state belong to the runner's goroutine.
	tracker     Tracker
	lastErr     string // the last transient error logged, so that a repeated one is logged once
	lastInvalid string // the last invalid-query error logged
	wasStale    bool

	// The rest is guarded by owner.mu: written by Throttler.apply, read by Snapshot and the metrics.
	state       State
	evaluations uint64
	errors      uint64
	backoffs    uint64
	byVerdict   [numVerdicts]uint64
	errText     string
	lastSuccess time.Time // zero before the first success
}

// run evaluates the signal at once, then at every tick, until ctx is done. Evaluations run one after another
// on this goroutine, so there is never more than one in flight; one that overruns the interval delays the next
// tick rather than overlapping it.
func (r *signalRunner) run(ctx context.Context) {
	tick := time.NewTicker(r.sig.Interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		r.evaluate(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// evaluate runs one evaluation with the signal's timeout, turns its verdict into the signal's state and hands
// that to the owner, which applies it to the window.
func (r *signalRunner) evaluate(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, r.sig.Timeout)
	start := time.Now()
	verdict, err := r.eval(qctx)
	elapsed := time.Since(start)
	cancel()
	if ctx.Err() != nil {
		return // the owner is stopping: an evaluation cut short by Close says nothing about the signal
	}
	if r.duration != nil {
		r.duration.Observe(elapsed.Seconds())
	}
	now := time.Now()
	state := r.tracker.Observe(now, verdict)
	r.logChange(state, err)
	r.owner.apply(r, now, state, err)
}

// logChange logs what changed with this evaluation: each new error once rather than every interval, the moment
// the fail mode takes over, and the recovery. An invalid query is logged at error level, since no retry can fix
// it and it silently disables the signal.
func (r *signalRunner) logChange(state State, err error) {
	switch {
	case state.Verdict == VerdictInvalid && err.Error() != r.lastInvalid:
		what := "its function reports an invalid query"
		if r.sig.Func == nil {
			what = fmt.Sprintf("query %q is invalid", r.sig.Query)
		}
		log.Errorf("throttle: signal %q: %s, so the signal never fires until it is fixed: %v", r.sig.Name, what, err)
		r.lastInvalid = err.Error()
	case state.Verdict == VerdictInvalid:
	case err != nil && err.Error() != r.lastErr:
		log.Warnf("throttle: signal %q: %v (%s)", r.sig.Name, err, describe(state))
		r.lastErr = err.Error()
	case err != nil && state.Stale && !r.wasStale: // the same error, but the fail mode now decides
		log.Warnf("throttle: signal %q: no successful evaluation for %v, %s applies: firing=%t", r.sig.Name, r.tracker.Staleness, r.tracker.FailMode, state.Firing)
	case err == nil && (r.lastErr != "" || r.lastInvalid != ""):
		log.Infof("throttle: signal %q evaluates again", r.sig.Name)
		r.lastErr, r.lastInvalid = "", ""
	}
	r.wasStale = state.Stale
}

// record stores an applied evaluation for the status and the metrics. The caller holds owner.mu.
func (r *signalRunner) record(now time.Time, state State, err error) {
	r.state = state
	r.evaluations++
	r.byVerdict[state.Verdict]++
	if err != nil {
		r.errors++
		r.errText = err.Error()
	} else {
		r.errText = ""
		r.lastSuccess = now
	}
	if state.Firing {
		r.backoffs++
	}
}

func describe(s State) string {
	switch {
	case s.Invalid:
		return "the query was found invalid, not firing"
	case s.Held:
		return fmt.Sprintf("keeping the last value, firing=%t", s.Firing)
	case s.Stale:
		return fmt.Sprintf("stale, fail mode says firing=%t", s.Firing)
	}
	return ""
}

// status returns the signal's state. The caller holds owner.mu.
func (r *signalRunner) status() SignalStatus {
	kind := "promql"
	if r.sig.Func != nil {
		kind = "func"
	}
	st := SignalStatus{
		Name:        r.sig.Name,
		Kind:        kind,
		Firing:      r.state.Firing,
		Held:        r.state.Held,
		Stale:       r.state.Stale,
		Invalid:     r.state.Invalid,
		Evaluations: r.evaluations,
		Errors:      r.errors,
		Backoffs:    r.backoffs,
		LastError:   r.errText,
	}
	if r.evaluations > 0 {
		st.Verdict = r.state.Verdict.String()
	}
	if !r.lastSuccess.IsZero() {
		at := r.lastSuccess // a copy: the snapshot must not share the runner's memory
		st.LastSuccess = &at
	}
	return st
}

// verdictCounts returns how many evaluations ended with each Verdict, indexed by Verdict.
func (r *signalRunner) verdictCounts() [numVerdicts]uint64 {
	r.owner.mu.Lock()
	defer r.owner.mu.Unlock()
	return r.byVerdict
}
