package core

import "time"

// FailMode is the state a trigger takes when it has not been evaluated successfully for Config.Staleness.
// It applies to errors that may pass (VerdictError) only: an invalid query (VerdictInvalid) never fires in
// either mode.
type FailMode uint8

const (
	// FailOpen treats a stale trigger as not firing: a broken Prometheus never throttles the service.
	FailOpen FailMode = iota
	// FailClosed treats a stale trigger as firing: the window backs off towards its minimum while the trigger
	// cannot be evaluated.
	FailClosed
)

func (m FailMode) String() string {
	if m == FailClosed {
		return "fail-closed"
	}
	return "fail-open"
}

// TriggerState is a trigger's effective state after an evaluation.
type TriggerState struct {
	// Firing is what the window acts on.
	Firing bool
	// Verdict is what this evaluation found.
	Verdict Verdict
	// Held: this evaluation failed and Firing is the last successful evaluation's, kept within Staleness.
	Held bool
	// Stale: this evaluation failed, no successful evaluation happened within Staleness (or ever), and Firing
	// is the fail mode's.
	Stale bool
	// Invalid: the query is invalid (VerdictInvalid), found by this evaluation or by the last one that was not
	// VerdictError, so it does not fire.
	Invalid bool
}

// Tracker turns a trigger's successive verdicts into its effective state, keeping the last good value across
// errors for a staleness period. It is a pure value: time is an argument. The zero value has a staleness of 0
// (every error applies the fail mode at once) and fails open.
type Tracker struct {
	Staleness time.Duration
	FailMode  FailMode

	ok         bool      // a successful evaluation has happened
	lastOK     time.Time // when
	lastFiring bool      // and whether it fired
	invalid    bool      // the query was found invalid, and no evaluation has succeeded since
}

// Observe records the verdict of an evaluation made at now and returns the trigger's state. A failed evaluation
// keeps the last successful state while now is less than Staleness after it; from then on, and when no evaluation
// has ever succeeded, the fail mode decides. An invalid query does not fire, and an error while the query is
// known to be invalid keeps it invalid: Prometheus being unreachable says nothing new about a query it rejected.
func (t *Tracker) Observe(now time.Time, v Verdict) TriggerState {
	switch v {
	case VerdictInvalid:
		t.invalid = true
		return TriggerState{Verdict: v, Invalid: true}
	case VerdictError:
	default:
		t.ok, t.lastOK, t.lastFiring, t.invalid = true, now, v == VerdictFiring, false
		return TriggerState{Firing: t.lastFiring, Verdict: v}
	}
	if t.invalid {
		return TriggerState{Verdict: v, Invalid: true}
	}
	if t.ok && now.Sub(t.lastOK) < t.Staleness {
		return TriggerState{Firing: t.lastFiring, Verdict: v, Held: true}
	}
	return TriggerState{Firing: t.FailMode == FailClosed, Verdict: v, Stale: true}
}

// LastSuccess returns the instant of the last successful evaluation and whether there was one.
func (t *Tracker) LastSuccess() (time.Time, bool) { return t.lastOK, t.ok }
