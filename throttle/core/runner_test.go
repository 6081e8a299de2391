package core

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

func TestTriggerEvaluatedAtStartThenEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{Interval: 10 * time.Second,
			Func: func(context.Context) (bool, error) { calls.Add(1); return false, nil }}}})
		defer e.Close()

		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d evaluations at start, want 1 (no waiting for the first period)", n)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d evaluations just before the first period, want 1", n)
		}
		time.Sleep(25*time.Second + time.Nanosecond) // t = 35 s: evaluations at 0, 10, 20, 30
		synctest.Wait()
		if n := calls.Load(); n != 4 {
			t.Fatalf("%d evaluations after 35 s at a 10 s interval, want 4", n)
		}
	})
}

func TestTriggerNeverTwoInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak, calls atomic.Int32
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{
			Interval: 10 * time.Second, Timeout: time.Minute,
			Func: func(ctx context.Context) (bool, error) {
				calls.Add(1)
				if n := inFlight.Add(1); n > peak.Load() {
					peak.Store(n)
				}
				defer inFlight.Add(-1)
				time.Sleep(25 * time.Second) // slower than the interval
				return false, nil
			},
		}}})
		time.Sleep(100 * time.Second)
		synctest.Wait()
		e.Close()
		if p := peak.Load(); p != 1 {
			t.Fatalf("peak concurrent evaluations %d, want 1", p)
		}
		// Evaluations start at 0, 25, 50, 75, 100: each starts as soon as the previous ends.
		if n := calls.Load(); n != 5 {
			t.Fatalf("%d evaluations in 100 s of 25 s evaluations, want 5", n)
		}
	})
}

func TestTriggerTimeoutComesFromTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var budget atomic.Int64
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{
			Name: "slow", Interval: 10 * time.Second, Timeout: 3 * time.Second,
			Func: func(ctx context.Context) (bool, error) {
				d, _ := ctx.Deadline()
				budget.Store(int64(time.Until(d)))
				<-ctx.Done() // a query that would never answer
				return true, ctx.Err()
			},
		}}})
		defer e.Close()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := time.Duration(budget.Load()); got != 3*time.Second {
			t.Fatalf("evaluation deadline %v away, want the 3s Timeout", got)
		}
		s := e.Status().Triggers[0]
		if s.Evaluations != 1 || s.Errors != 1 || s.Verdict != "error" || s.Firing || !s.Stale {
			t.Fatalf("timed-out first evaluation: %+v, want one error, stale, fail-open (not firing)", s)
		}
		if s.LastError != context.DeadlineExceeded.Error() {
			t.Fatalf("LastError %q, want %q", s.LastError, context.DeadlineExceeded)
		}
	})
}

func TestTriggerFuncPanicIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(Config[any, any]{DisableMetrics: true, FailMode: FailClosed, Triggers: []Trigger{{Interval: time.Second,
			Func: func(context.Context) (bool, error) { panic("bug in the trigger") }}}})
		defer e.Close()
		synctest.Wait()
		s := e.Status().Triggers[0]
		if s.Errors != 1 || !s.Firing || !s.Stale {
			t.Fatalf("panicking trigger under fail-closed: %+v, want one error, stale and firing", s)
		}
	})
}

// TestInvalidQueryNeverFires: a query Prometheus rejects as bad_data (a typo) is a configuration bug, not
// backpressure. Under fail-closed it must not pin the window to its minimum, not even when errors that may
// pass (Prometheus unavailable) come in between and staleness runs out; it shows as invalid and is logged at
// error level once. Once the query evaluates, the trigger works as any other.
func TestInvalidQueryNeverFires(t *testing.T) {
	logs := &logBuffer{}
	synctest.Test(t, func(t *testing.T) {
		badData := &promv1.Error{Type: promv1.ErrBadData, Msg: `1:8: parse error: unexpected end of input`}
		unavailable := &promv1.Error{Type: promv1.ErrServer, Msg: "server error: 503"}
		var answer atomic.Pointer[promv1.Error] // the error Prometheus answers with, or nil to fire
		answer.Store(badData)
		e := newLoggedEngine(Config[any, any]{DisableMetrics: true, WindowMin: 2, WindowMax: 64,
			FailMode: FailClosed, Staleness: 30 * time.Second,
			Triggers: []Trigger{{Name: "typo", Interval: 10 * time.Second, Func: func(context.Context) (bool, error) {
				if err := answer.Load(); err != nil {
					return false, err
				}
				return true, nil
			}}}}, logs)
		defer e.Close()
		synctest.Wait()
		check := func(when, verdict string, invalid bool) {
			t.Helper()
			s := e.Status()
			if sig := s.Triggers[0]; sig.Verdict != verdict || sig.Invalid != invalid || sig.Firing || s.GrowthHeld || sig.Backoffs != 0 {
				t.Fatalf("%s: %+v, growth held %t; want verdict %s, invalid %t, never firing", when, sig, s.GrowthHeld, verdict, invalid)
			}
		}
		check("first evaluation", "invalid", true)
		grow(t, e, 64)

		// 10 s to 120 s: bad_data and 503 alternate, far past the 30 s staleness; no evaluation ever succeeded.
		for i := 1; i <= 12; i++ {
			if i%2 == 1 {
				answer.Store(unavailable)
			} else {
				answer.Store(badData)
			}
			time.Sleep(10 * time.Second)
			synctest.Wait()
			if i%2 == 1 {
				check(fmt.Sprintf("503 at %d s, the query known invalid", 10*i), "error", true)
			} else {
				check(fmt.Sprintf("bad_data at %d s", 10*i), "invalid", true)
			}
			if w := e.Status().Window; w != 64 {
				t.Fatalf("window %d at %d s, want 64: an invalid query must not throttle", w, 10*i)
			}
		}
		if s := e.Status().Triggers[0]; s.Errors != 13 || s.LastError != badData.Error() || s.LastSuccess != nil {
			t.Fatalf("after 13 failed evaluations: %+v", s)
		}
		if n := strings.Count(logs.String(), "[Error] throttle: trigger \"typo\": its function reports an invalid query, so the trigger never fires"); n != 1 {
			t.Fatalf("invalid query logged at error level %d times, want once:\n%s", n, logs)
		}

		// Fixed (or the server now understands it): the trigger fires and the window halves, as for any trigger.
		answer.Store(nil)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		s := e.Status()
		if sig := s.Triggers[0]; !sig.Firing || sig.Invalid || sig.Verdict != "firing" || !s.GrowthHeld || s.Window != 32 || sig.LastSuccess == nil {
			t.Fatalf("query valid and firing: %+v, want firing, no longer invalid, window 32", s)
		}
		if !strings.Contains(logs.String(), `trigger "typo" evaluates again`) {
			t.Fatalf("recovery not logged:\n%s", logs)
		}
		// Now the fail mode applies to errors again: a Prometheus down past staleness fails closed.
		answer.Store(unavailable)
		time.Sleep(40 * time.Second)
		synctest.Wait()
		if sig := e.Status().Triggers[0]; !sig.Firing || !sig.Stale || sig.Invalid {
			t.Fatalf("503s past staleness after a success: %+v, want stale and fail-closed", sig)
		}
	})
}

// logBuffer is a Logger that keeps what an Engine logs, one "[Level] message" line each.
type logBuffer struct{ coretest.Buffer }

func (b *logBuffer) Infof(format string, v ...any) {
	fmt.Fprintf(&b.Buffer, "[Info] "+format+"\n", v...)
}
func (b *logBuffer) Warnf(format string, v ...any) {
	fmt.Fprintf(&b.Buffer, "[Warn] "+format+"\n", v...)
}
func (b *logBuffer) Errorf(format string, v ...any) {
	fmt.Fprintf(&b.Buffer, "[Error] "+format+"\n", v...)
}
