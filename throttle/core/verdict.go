package core

import (
	"errors"
	"fmt"
	"math"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Verdict is what one evaluation of a trigger found.
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
	// timeout, a 5xx, a 422 execution error, a malformed body. The trigger's previous state is kept for
	// Config.Staleness, then Config.FailMode decides.
	VerdictError
	// VerdictInvalid means the query can never succeed as written: Prometheus rejected it as bad_data (a PromQL
	// syntax or type error), or it yields a range vector or a string. It is a configuration bug, not
	// backpressure: the trigger does not fire in either fail mode, and stays invalid until an evaluation succeeds.
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

// ErrUnsupportedResult reports a query result that that cannot say whether a trigger fires (a range vector or a string).
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
