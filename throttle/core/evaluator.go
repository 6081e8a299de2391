package core

import (
	"context"
	"fmt"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// evaluator evaluates a trigger once within ctx.
type evaluator func(ctx context.Context) (Verdict, error)

// evaluatorOf returns the evaluator of s: its Func, or its Query against prom.
func evaluatorOf(s Trigger, prom promv1.API) evaluator {
	if s.Func != nil {
		return funcEvaluator(s.Func)
	}
	return queryEvaluator(prom, s.Query)
}

// queryEvaluator evaluates a PromQL instant query at the server's current time.
func queryEvaluator(prom promv1.API, query string) evaluator {
	return func(ctx context.Context) (Verdict, error) {
		v, _, _, err := prom.Query(ctx, query, time.Time{})
		return Classify(v, err)
	}
}

// funcEvaluator evaluates an in-process trigger; a panic in it counts as a failed evaluation.
func funcEvaluator(f func(context.Context) (bool, error)) evaluator {
	return func(ctx context.Context) (v Verdict, err error) {
		defer func() {
			if p := recover(); p != nil {
				v, err = VerdictError, fmt.Errorf("throttle: trigger function panicked: %v", p)
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

// failing evaluates a query whose Prometheus client could not be built: every evaluation reports err, as an
// invalid query does, since asking again cannot succeed.
func failing(err error) evaluator {
	return func(context.Context) (Verdict, error) { return VerdictInvalid, err }
}
