package throttle

import (
	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/prometheus/common/model"
)

// The core's public names, re-exported so that users import only this package. Their documentation is the
// core's.

// Trigger is one input of the window: a backpressure signal, a PromQL query or a func that fires or not. See
// core.Trigger.
type Trigger = core.Trigger

// Window is an AIMD concurrency window, safe for concurrent use and lock-free. See core.Window.
type Window = core.Window

// MaxWindow is the largest window a Window can hold (2^21 - 1 concurrent requests).
const MaxWindow = core.MaxWindow

// NewWindow returns a window of size lo that stays within [lo, hi]. It panics unless
// 1 <= lo <= hi <= MaxWindow.
func NewWindow(lo, hi int) *Window { return core.NewWindow(lo, hi) }

// Verdict is what one evaluation of a trigger found. See core.Verdict.
type Verdict = core.Verdict

// The verdicts of an evaluation; see core.VerdictNoData and the others.
const (
	VerdictNoData  = core.VerdictNoData  // an empty vector or only NaN: not firing
	VerdictFalse   = core.VerdictFalse   // samples, all 0: not firing
	VerdictFiring  = core.VerdictFiring  // a non-zero sample or scalar
	VerdictError   = core.VerdictError   // a failure that may pass: Staleness, then FailMode
	VerdictInvalid = core.VerdictInvalid // the query can never succeed as written: never firing
)

// ErrUnsupportedResult reports a query result that cannot say whether a trigger fires (a range vector or a
// string).
var ErrUnsupportedResult = core.ErrUnsupportedResult

// Classify turns a PromQL result into a Verdict. See core.Classify.
func Classify(v model.Value, err error) (Verdict, error) { return core.Classify(v, err) }

// FailMode is the state a trigger takes when it has not been evaluated successfully for Config.Staleness. See
// core.FailMode.
type FailMode = core.FailMode

// The fail modes.
const (
	FailOpen   = core.FailOpen   // a stale trigger does not fire
	FailClosed = core.FailClosed // a stale trigger fires: the window backs off towards its minimum
)

// Tracker turns a trigger's successive verdicts into its effective state, time as an argument. See
// core.Tracker.
type Tracker = core.Tracker

// TriggerState is a trigger's effective state after an evaluation. See core.TriggerState.
type TriggerState = core.TriggerState

// Status is a point-in-time view of a Throttler, for status pages. Its JSON keys are snake_case. See
// core.Status.
type Status = core.Status

// TriggerStatus is a trigger's state in a Status. See core.TriggerStatus.
type TriggerStatus = core.TriggerStatus
