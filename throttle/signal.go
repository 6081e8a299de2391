package throttle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Signal is one backpressure signal feeding the window: a PromQL query evaluated against Config.PrometheusURL,
// or a Go function evaluated in process. Exactly one of Query and Func is set.
type Signal struct {
	// Name identifies the signal in metrics ("signal" label), logs and Snapshot. It comes from configuration
	// only, never from requests.
	//
	// Optional. Default: "query_<i>" for Config.Queries[i], "signal_<i>" for Config.Signals[i]
	Name string

	// Query is a PromQL instant query. It fires when it returns a vector with at least one non-zero sample or
	// a non-zero scalar: write `x > 0.5` (an empty vector when false) or `x > bool 0.5` (a 0 sample when false).
	Query string

	// Func is an in-process signal, for example a local queue length: it reports whether the signal fires.
	// It is called from the signal's own goroutine with a context carrying Timeout; an error is handled like a
	// failed query (the last value is kept for Staleness, then the fail mode applies).
	Func func(ctx context.Context) (firing bool, err error)

	// Interval overrides Config.Interval for this signal.
	//
	// Optional. Default: Config.Interval
	Interval time.Duration

	// Timeout overrides Config.Timeout for this signal.
	//
	// Optional. Default: Config.Timeout
	Timeout time.Duration
}

// Verdict is what one evaluation of a signal found.
type Verdict uint8

const (
	// VerdictNoData means the query succeeded and returned nothing usable: an empty vector (the series is missing or
	// a filter such as `x > 0.5` dropped it) or only NaN values. Not firing.
	VerdictNoData Verdict = iota
	// VerdictFalse means the query returned samples and all of them are 0 (`x > bool 0.5` when false). Not firing.
	VerdictFalse
	// VerdictFiring means at least one non-zero sample or a non-zero scalar.
	VerdictFiring
	// VerdictError means the evaluation failed in a way that may pass: Prometheus unreachable, slower than the
	// timeout, a 5xx, a 422 execution error, a malformed body. The signal's previous state is kept for
	// Config.Staleness, then Config.FailMode decides.
	VerdictError
	// VerdictInvalid means the query can never succeed as written: Prometheus rejected it as bad_data (a PromQL
	// syntax or type error), or it yields a range vector or a string. It is a configuration bug, not
	// backpressure: the signal does not fire in either fail mode, and stays invalid until an evaluation succeeds.
	VerdictInvalid
)

// numVerdicts sizes the per-verdict counters.
const numVerdicts = int(VerdictInvalid) + 1

func (v Verdict) String() string {
	switch v {
	case VerdictNoData:
		return "no_data"
	case VerdictFalse:
		return "false"
	case VerdictFiring:
		return "firing"
	case VerdictError:
		return "error"
	case VerdictInvalid:
		return "invalid"
	}
	return "unknown"
}

// ErrUnsupportedResult reports a query result that cannot be read as a signal (a range vector or a string).
var ErrUnsupportedResult = errors.New("throttle: query result is not an instant vector or a scalar")

// Classify turns a PromQL result into a Verdict.
//
// An error is VerdictInvalid when Prometheus rejected the query itself (a *v1.Error of type bad_data, answered
// with 400 for a PromQL syntax or type error): asking again cannot succeed. Every other error is VerdictError,
// since it can pass: transport errors, timeouts, cancellations, 5xx, client errors other than 400 and 422 (a
// proxy in the way), and 422 execution errors, which depend on the data the query meets.
//
// A vector fires when at least one sample is non-zero. Samples of value 0 are "false" rather than firing because
// that is how a `bool` comparison says false; the cost is that a filter whose kept samples are legitimately 0
// (`x > -1` with x = 0) reads as false too, so compare against a threshold, or use `bool`. NaN is not a truth
// value (0/0 when a rate has no requests), so NaN samples and a NaN scalar are ignored: a result with nothing
// but NaN is "no data", not firing. A matrix (range vector) or a string is VerdictInvalid: the query is
// misconfigured.
func Classify(v model.Value, err error) (Verdict, error) {
	if err != nil {
		return errorVerdict(err), err
	}
	switch r := v.(type) {
	case model.Vector:
		verdict := VerdictNoData
		for _, s := range r {
			f := float64(s.Value)
			switch {
			case math.IsNaN(f):
			case f != 0:
				return VerdictFiring, nil
			default:
				verdict = VerdictFalse
			}
		}
		return verdict, nil
	case *model.Scalar:
		if r == nil {
			return VerdictError, ErrUnsupportedResult
		}
		return classifyNumber(float64(r.Value)), nil
	case nil:
		return VerdictError, ErrUnsupportedResult
	default: // the type of a PromQL result follows from the query's syntax alone: asking again gives the same
		return VerdictInvalid, fmt.Errorf("%w: got %s", ErrUnsupportedResult, v.Type())
	}
}

// errorVerdict tells an error that will recur on every evaluation (VerdictInvalid) from one that may pass.
func errorVerdict(err error) Verdict {
	var apiErr *promv1.Error
	if errors.As(err, &apiErr) && apiErr.Type == promv1.ErrBadData {
		return VerdictInvalid
	}
	return VerdictError
}

func classifyNumber(f float64) Verdict {
	switch {
	case math.IsNaN(f):
		return VerdictNoData
	case f != 0:
		return VerdictFiring
	}
	return VerdictFalse
}

// FailMode is the state a signal takes when it has not been evaluated successfully for Config.Staleness.
// It applies to errors that may pass (VerdictError) only: an invalid query (VerdictInvalid) never fires in
// either mode.
type FailMode uint8

const (
	// FailOpen treats a stale signal as not firing: a broken Prometheus never throttles the service.
	FailOpen FailMode = iota
	// FailClosed treats a stale signal as firing: the window backs off towards its minimum while the signal
	// cannot be evaluated.
	FailClosed
)

func (m FailMode) String() string {
	if m == FailClosed {
		return "fail-closed"
	}
	return "fail-open"
}

// State is a signal's effective state after an evaluation.
type State struct {
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

// Tracker turns a signal's successive verdicts into its effective state, keeping the last good value across
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

// Observe records the verdict of an evaluation made at now and returns the signal's state. A failed evaluation
// keeps the last successful state while now is less than Staleness after it; from then on, and when no evaluation
// has ever succeeded, the fail mode decides. An invalid query does not fire, and an error while the query is
// known to be invalid keeps it invalid: Prometheus being unreachable says nothing new about a query it rejected.
func (t *Tracker) Observe(now time.Time, v Verdict) State {
	switch v {
	case VerdictInvalid:
		t.invalid = true
		return State{Verdict: v, Invalid: true}
	case VerdictError:
	default:
		t.ok, t.lastOK, t.lastFiring, t.invalid = true, now, v == VerdictFiring, false
		return State{Firing: t.lastFiring, Verdict: v}
	}
	if t.invalid {
		return State{Verdict: v, Invalid: true}
	}
	if t.ok && now.Sub(t.lastOK) < t.Staleness {
		return State{Firing: t.lastFiring, Verdict: v, Held: true}
	}
	return State{Firing: t.FailMode == FailClosed, Verdict: v, Stale: true}
}

// LastSuccess returns the instant of the last successful evaluation and whether there was one.
func (t *Tracker) LastSuccess() (time.Time, bool) { return t.lastOK, t.ok }
