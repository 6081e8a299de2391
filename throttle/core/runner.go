package core

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// runner evaluates one trigger on its own goroutine, one evaluation at a time, and reports each resulting state.
// All of it belongs to that goroutine once run starts.
type runner struct {
	trigger  Trigger
	eval     evaluator
	tracker  Tracker
	duration prometheus.Observer // nil without metrics
	log      Logger
	// report receives every evaluation that ran to its end: the Engine applies it to the window.
	report func(now time.Time, state TriggerState, err error)

	lastErr     string // the last transient error logged, so that a repeated one is logged once
	lastInvalid string // the last invalid-query error logged
	wasStale    bool
}

// run evaluates the trigger at once, then at every tick, until ctx is done. Evaluations run one after another
// on this goroutine, so there is never more than one in flight; one that overruns the interval delays the next
// tick rather than overlapping it.
func (r *runner) run(ctx context.Context) {
	tick := time.NewTicker(r.trigger.Interval)
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

// evaluate runs one evaluation with the trigger's timeout, turns its verdict into the trigger's state and
// reports it.
func (r *runner) evaluate(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, r.trigger.Timeout)
	start := time.Now()
	verdict, err := r.eval(qctx)
	elapsed := time.Since(start)
	cancel()
	if ctx.Err() != nil {
		return // stopping: an evaluation cut short by Close says nothing about the trigger
	}
	if r.duration != nil {
		r.duration.Observe(elapsed.Seconds())
	}
	now := time.Now()
	state := r.tracker.Observe(now, verdict)
	r.logChange(state, err)
	r.report(now, state, err)
}

// logChange logs what changed with this evaluation: each new error once rather than every interval, the moment
// the fail mode takes over, and the recovery. An invalid query is logged at error level, since no retry can fix
// it and it silently disables the trigger.
func (r *runner) logChange(state TriggerState, err error) {
	switch {
	case state.Verdict == VerdictInvalid && err.Error() != r.lastInvalid:
		what := "its function reports an invalid query"
		if r.trigger.Func == nil {
			what = fmt.Sprintf("query %q is invalid", r.trigger.Query)
		}
		r.log.Errorf("throttle: trigger %q: %s, so the trigger never fires until it is fixed: %v", r.trigger.Name, what, err)
		r.lastInvalid = err.Error()
	case state.Verdict == VerdictInvalid:
	case err != nil && err.Error() != r.lastErr:
		r.log.Warnf("throttle: trigger %q: %v (%s)", r.trigger.Name, err, describe(state))
		r.lastErr = err.Error()
	case err != nil && state.Stale && !r.wasStale: // the same error, but the fail mode now decides
		r.log.Warnf("throttle: trigger %q: no successful evaluation for %v, %s applies: firing=%t", r.trigger.Name, r.tracker.Staleness, r.tracker.FailMode, state.Firing)
	case err == nil && (r.lastErr != "" || r.lastInvalid != ""):
		r.log.Infof("throttle: trigger %q evaluates again", r.trigger.Name)
		r.lastErr, r.lastInvalid = "", ""
	}
	r.wasStale = state.Stale
}

func describe(s TriggerState) string {
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
