package throttle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2/log"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// grow saturates the throttler's window until it reaches size (growth must not be held).
func grow(t *testing.T, th *Throttler, size int) {
	t.Helper()
	for round := 0; th.window.Size() < size; round++ {
		if round > 2*size { // each round grows the window by one unless growth is held
			drain(th.window)
			t.Fatalf("window stuck at %d while growing to %d: growth held (%+v)", th.window.Size(), size, th.Snapshot())
		}
		saturate(th.window, th.window.Size())
	}
	drain(th.window)
	if th.window.Size() != size {
		t.Fatalf("grew to %d, want %d", th.window.Size(), size)
	}
}

func TestSignalEvaluatedAtStartThenEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		th := NewThrottler(Config{DisableMetrics: true, Signals: []Signal{{Interval: 10 * time.Second,
			Func: func(context.Context) (bool, error) { calls.Add(1); return false, nil }}}})
		defer th.Close()

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

func TestSignalNeverTwoInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak, calls atomic.Int32
		th := NewThrottler(Config{DisableMetrics: true, Signals: []Signal{{
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
		th.Close()
		if p := peak.Load(); p != 1 {
			t.Fatalf("peak concurrent evaluations %d, want 1", p)
		}
		// Evaluations start at 0, 25, 50, 75, 100: each starts as soon as the previous ends.
		if n := calls.Load(); n != 5 {
			t.Fatalf("%d evaluations in 100 s of 25 s evaluations, want 5", n)
		}
	})
}

func TestSignalTimeoutComesFromTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var budget atomic.Int64
		th := NewThrottler(Config{DisableMetrics: true, Signals: []Signal{{
			Name: "slow", Interval: 10 * time.Second, Timeout: 3 * time.Second,
			Func: func(ctx context.Context) (bool, error) {
				d, _ := ctx.Deadline()
				budget.Store(int64(time.Until(d)))
				<-ctx.Done() // a query that would never answer
				return true, ctx.Err()
			},
		}}})
		defer th.Close()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := time.Duration(budget.Load()); got != 3*time.Second {
			t.Fatalf("evaluation deadline %v away, want the 3s Timeout", got)
		}
		s := th.Snapshot().Signals[0]
		if s.Evaluations != 1 || s.Errors != 1 || s.Verdict != "error" || s.Firing || !s.Stale {
			t.Fatalf("timed-out first evaluation: %+v, want one error, stale, fail-open (not firing)", s)
		}
		if s.LastError != context.DeadlineExceeded.Error() {
			t.Fatalf("LastError %q, want %q", s.LastError, context.DeadlineExceeded)
		}
	})
}

func TestFiringHalvesOncePerEvaluation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var firing atomic.Bool
		th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64, Signals: []Signal{{
			Interval: 10 * time.Second,
			Func:     func(context.Context) (bool, error) { return firing.Load(), nil },
		}}})
		defer th.Close()
		synctest.Wait() // first evaluation: not firing
		grow(t, th, 32)

		firing.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if w := th.Window(); w != 16 {
			t.Fatalf("window %d after one firing evaluation, want 16", w)
		}
		// Thousands of requests complete between evaluations: the window neither halves again nor grows.
		saturate(th.window, 5000)
		drain(th.window)
		if w := th.Window(); w != 16 {
			t.Fatalf("window %d after requests while firing, want 16", w)
		}
		time.Sleep(20 * time.Second) // two more firing evaluations
		synctest.Wait()
		if w := th.Window(); w != 4 {
			t.Fatalf("window %d after three firing evaluations, want 4", w)
		}
		time.Sleep(20 * time.Second) // two more: clamped at min
		synctest.Wait()
		if w := th.Window(); w != 2 {
			t.Fatalf("window %d, want the minimum 2", w)
		}
		if b := th.Snapshot().Signals[0].Backoffs; b != 5 {
			t.Fatalf("%d backoffs, want 5 (one per firing evaluation)", b)
		}

		firing.Store(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		saturate(th.window, 2+3)
		if w := th.Window(); w != 4 {
			t.Fatalf("window %d after two rounds once the signal cleared, want 4", w)
		}
	})
}

func TestAnySignalFiringHoldsGrowth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a, b atomic.Bool
		sig := func(v *atomic.Bool) func(context.Context) (bool, error) {
			return func(context.Context) (bool, error) { return v.Load(), nil }
		}
		th := NewThrottler(Config{DisableMetrics: true, WindowMin: 4, WindowMax: 64, Interval: time.Second,
			Signals: []Signal{{Name: "a", Func: sig(&a)}, {Name: "b", Func: sig(&b)}}})
		defer th.Close()
		a.Store(true)
		b.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		a.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		saturate(th.window, 100)
		if w := th.Window(); w != 4 {
			t.Fatalf("window grew to %d while signal b fires", w)
		}
		b.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		saturate(th.window, 4)
		if w := th.Window(); w != 5 {
			t.Fatalf("window %d once no signal fires, want 5", w)
		}
		drain(th.window)
	})
}

func TestStaleSignalTakesTheFailMode(t *testing.T) {
	tests := []struct {
		name       string
		mode       FailMode
		lastGood   bool // the value before the errors start
		wantWindow []int
		wantFiring []bool
	}{
		// The last success is at t=10 s. Errors 10 s and 20 s after it are within the 30 s staleness and keep the
		// last value (a kept "firing" still halves the window on each evaluation); from 30 s on
		// the fail mode decides.
		{"fail-open after firing", FailOpen, true, []int{8, 4, 4, 4}, []bool{true, true, false, false}},
		{"fail-closed after not firing", FailClosed, false, []int{32, 32, 16, 8}, []bool{false, false, true, true}},
		{"fail-open after not firing", FailOpen, false, []int{32, 32, 32, 32}, []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var broken, ready atomic.Bool
				th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64,
					Staleness: 30 * time.Second, FailMode: tt.mode,
					Signals: []Signal{{Interval: 10 * time.Second, Func: func(context.Context) (bool, error) {
						switch {
						case broken.Load():
							return false, errors.New("prometheus: connection refused")
						case !ready.Load():
							return false, nil
						}
						return tt.lastGood, nil
					}}}})
				defer th.Close()
				synctest.Wait() // t=0: not firing, so the window can grow
				grow(t, th, 64)
				th.window.Backoff() // 32: room to see halvings either way
				ready.Store(true)
				time.Sleep(10 * time.Second) // t=10: the last good value
				synctest.Wait()
				broken.Store(true)
				if tt.lastGood {
					if w := th.Window(); w != 16 {
						t.Fatalf("setup: window %d after one firing evaluation, want 16", w)
					}
					th.window.SetHold(true)
				}
				for i := range tt.wantWindow {
					time.Sleep(10 * time.Second) // errors at t=20, 30, 40, 50: 10 s .. 40 s after the last success
					synctest.Wait()
					s := th.Snapshot()
					if s.Window != tt.wantWindow[i] || s.Signals[0].Firing != tt.wantFiring[i] {
						t.Fatalf("error %d (%d s after the last success): window %d firing %t, want %d %t (%+v)",
							i+1, 10*(i+1), s.Window, s.Signals[0].Firing, tt.wantWindow[i], tt.wantFiring[i], s.Signals[0])
					}
					if stale := 10*(i+1) >= 30; s.Signals[0].Stale != stale || s.Signals[0].Held == stale {
						t.Fatalf("error %d: stale %t held %t, want stale %t", i+1, s.Signals[0].Stale, s.Signals[0].Held, stale)
					}
				}
			})
		})
	}
}

func TestSignalFuncPanicIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottler(Config{DisableMetrics: true, FailMode: FailClosed, Signals: []Signal{{Interval: time.Second,
			Func: func(context.Context) (bool, error) { panic("bug in the signal") }}}})
		defer th.Close()
		synctest.Wait()
		s := th.Snapshot().Signals[0]
		if s.Errors != 1 || !s.Firing || !s.Stale {
			t.Fatalf("panicking signal under fail-closed: %+v, want one error, stale and firing", s)
		}
	})
}

func TestCloseStopsSignalsAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		th := NewThrottler(Config{DisableMetrics: true, Signals: []Signal{{Interval: time.Second,
			Func: func(ctx context.Context) (bool, error) {
				calls.Add(1)
				<-ctx.Done() // Close must cancel an evaluation in progress
				return false, ctx.Err()
			}}}})
		synctest.Wait()
		th.Close()
		th.Close()
		n := calls.Load()
		time.Sleep(time.Minute)
		synctest.Wait()
		if calls.Load() != n {
			t.Fatal("signal evaluated after Close")
		}
		if s := th.Snapshot().Signals[0]; s.Evaluations != 0 {
			t.Fatalf("an evaluation cut short by Close was recorded: %+v", s)
		}
	})
}

// fakeProm answers the Prometheus query API with a fixed status and body, or not at all ("hang").
func fakeProm(t *testing.T, status *atomic.Int32, body *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm() // read the body, so that the server notices when the client gives up
		b := body.Load().(string)
		if b == "hang" {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func vectorBody(values ...string) string {
	s := `{"status":"success","data":{"resultType":"vector","result":[`
	for i, v := range values {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"metric":{"instance":"i%d"},"value":[1764500000.123,%q]}`, i, v)
	}
	return s + `]}}`
}

// TestQueryEvaluatorOverHTTP runs each shape of Prometheus answer through client_golang's real HTTP client and
// decoding, as a deployed throttle would see it.
func TestQueryEvaluatorOverHTTP(t *testing.T) {
	var status atomic.Int32
	var body atomic.Value
	srv := fakeProm(t, &status, &body)

	// An address nothing listens on: Prometheus down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name   string
		addr   string
		status int
		body   string
		want   Verdict
	}{
		{"x > 0.5 true", srv.URL, 200, vectorBody("0.7"), VerdictFiring},
		{"x > 0.5 false: empty vector", srv.URL, 200, vectorBody(), VerdictNoData},
		{"x > bool 0.5 false", srv.URL, 200, vectorBody("0"), VerdictFalse},
		{"x > bool 0.5 true", srv.URL, 200, vectorBody("0", "1"), VerdictFiring},
		{"NaN sample", srv.URL, 200, vectorBody("NaN"), VerdictNoData},
		{"scalar 1", srv.URL, 200, `{"status":"success","data":{"resultType":"scalar","result":[1764500000,"1"]}}`, VerdictFiring},
		{"scalar NaN", srv.URL, 200, `{"status":"success","data":{"resultType":"scalar","result":[1764500000,"NaN"]}}`, VerdictNoData},
		{"matrix: a range vector query", srv.URL, 200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1764500000,"1"]]}]}}`, VerdictInvalid},
		// client_golang does not decode a string result at all: it reports a bad response, which may pass.
		{"string: client_golang cannot decode it", srv.URL, 200, `{"status":"success","data":{"resultType":"string","result":[1764500000,"x"]}}`, VerdictError},
		{"bad query: 400 bad_data", srv.URL, 400, `{"status":"error","errorType":"bad_data","error":"1:11: parse error: unexpected end of input"}`, VerdictInvalid},
		{"execution error: 422", srv.URL, 422, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`, VerdictError},
		{"400 from a proxy, not Prometheus", srv.URL, 400, `<html>bad request</html>`, VerdictError},
		{"404: not the query API", srv.URL, 404, `404 page not found`, VerdictError},
		{"server error: 500", srv.URL, 500, `internal error`, VerdictError},
		{"query timeout: 503", srv.URL, 503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, VerdictError},
		{"overloaded: 503", srv.URL, 503, `{"status":"error","errorType":"unavailable","error":"busy"}`, VerdictError},
		{"garbage body", srv.URL, 200, `<html>not prometheus</html>`, VerdictError},
		{"truncated JSON", srv.URL, 200, `{"status":"success","data":{"resultType":"vector","result":[`, VerdictError},
		{"slow: past the timeout", srv.URL, 200, "hang", VerdictError},
		{"down: connection refused", down, 200, vectorBody("1"), VerdictError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status.Store(int32(tt.status))
			body.Store(tt.body)
			client, err := api.NewClient(api.Config{Address: tt.addr})
			if err != nil {
				t.Fatal(err)
			}
			// Generous for the answers (a loaded CI machine), short for the server that never answers.
			timeout := 10 * time.Second
			if tt.body == "hang" {
				timeout = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			got, err := queryEvaluator(promv1.NewAPI(client), "x > 0.5")(ctx)
			if failed := got == VerdictError || got == VerdictInvalid; got != tt.want || failed != (err != nil) {
				t.Fatalf("verdict %v (err %v), want %v", got, err, tt.want)
			}
		})
	}
}

// TestPrometheusSignalSteersTheWindow drives a whole Throttler from an HTTP Prometheus API on the real clock:
// firing halves the window, an empty vector lets it grow, and a 5xx within staleness keeps the last value.
func TestPrometheusSignalSteersTheWindow(t *testing.T) {
	var status atomic.Int32
	var body atomic.Value
	status.Store(200)
	body.Store(vectorBody())
	srv := fakeProm(t, &status, &body)

	th := NewThrottler(Config{DisableMetrics: true, PrometheusURL: srv.URL, Queries: []string{"backend_busy > 0.5"},
		Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, Staleness: time.Hour, WindowMin: 2, WindowMax: 64})
	defer th.Close()
	waitFor(t, func() bool { return th.Snapshot().Signals[0].Verdict == "no_data" })
	grow(t, th, 32)

	body.Store(vectorBody("0.9"))
	waitFor(t, func() bool { return th.Window() < 32 })
	waitFor(t, func() bool { return th.Window() == 2 })
	if s := th.Snapshot(); !s.GrowthHeld || !s.Signals[0].Firing {
		t.Fatalf("firing query: %+v", s)
	}

	errorsBefore := th.Snapshot().Signals[0].Errors
	status.Store(503)
	body.Store(`{"status":"error","errorType":"unavailable","error":"busy"}`)
	waitFor(t, func() bool { return th.Snapshot().Signals[0].Errors > errorsBefore })
	if s := th.Snapshot().Signals[0]; !s.Firing || !s.Held {
		t.Fatalf("5xx within staleness: %+v, want the last value (firing) held", s)
	}

	status.Store(200)
	body.Store(vectorBody("0"))
	waitFor(t, func() bool { return th.Snapshot().Signals[0].Verdict == "false" && !th.Snapshot().GrowthHeld })
	saturate(th.window, 2+3)
	if w := th.Window(); w != 4 {
		t.Fatalf("window %d after two rounds with the query false, want 4", w)
	}
	drain(th.window)
}

// TestGrowthHeldWhenSignalsFinishTogether replays the interleaving of a calm signal finishing together with a
// firing one: the calm signal has read every signal's state (none fires yet) and is about to set the window's
// hold when the firing signal's evaluation completes. Whatever the order, the hold left behind must agree with
// the states: held, since a signal fires.
func TestGrowthHeldWhenSignalsFinishTogether(t *testing.T) {
	goFiring, goCalm := make(chan struct{}), make(chan struct{})
	gated := func(gate <-chan struct{}, firing bool) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			select {
			case <-gate:
				return firing, nil
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
	}
	th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64, Interval: time.Hour,
		Signals: []Signal{{Name: "firing", Func: gated(goFiring, true)}, {Name: "calm", Func: gated(goCalm, false)}}})
	defer th.Close()
	calmPaused, resumeCalm := make(chan struct{}), make(chan struct{})
	th.beforeHold = func(signal string) { // set before the gates open: the evaluations happen after this write
		if signal == "calm" {
			close(calmPaused)
			<-resumeCalm
		}
	}

	close(goCalm)
	<-calmPaused
	close(goFiring)
	// Unordered, the firing signal sets the hold at once; ordered, it cannot apply its evaluation before the calm
	// one is done, and the wait runs out.
	for deadline := time.Now().Add(100 * time.Millisecond); !th.window.Held() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(resumeCalm)
	waitFor(t, func() bool {
		s := th.Snapshot()
		return s.Signals[0].Evaluations == 1 && s.Signals[1].Evaluations == 1
	})

	s := th.Snapshot()
	if !s.Signals[0].Firing || s.Signals[1].Firing || !s.GrowthHeld {
		t.Fatalf("after both evaluations: firing=%t calm=%t growth held=%t, want the hold on while a signal fires",
			s.Signals[0].Firing, s.Signals[1].Firing, s.GrowthHeld)
	}
	saturate(th.window, 100)
	if w := th.Window(); w != 2 {
		t.Fatalf("window grew to %d while a signal fires, want 2", w)
	}
}

// TestSnapshotHoldAgreesWithSignals flips three signals at random as fast as they are evaluated while
// snapshots are taken: every snapshot shows growth held exactly when one of its signals fires, and so does the
// window once the signals stop.
func TestSnapshotHoldAgreesWithSignals(t *testing.T) {
	flipping := func(seed uint64) func(context.Context) (bool, error) {
		rng := rand.New(rand.NewPCG(seed, 1)) // used by this signal's goroutine only
		return func(context.Context) (bool, error) { return rng.IntN(3) == 0, nil }
	}
	th := NewThrottler(Config{DisableMetrics: true, Interval: time.Millisecond,
		Signals: []Signal{{Name: "a", Func: flipping(1)}, {Name: "b", Func: flipping(2)}, {Name: "c", Func: flipping(3)}}})
	defer th.Close()

	const evaluations = 200 // per signal: enough flips that an unordered hold shows up
	deadline := time.Now().Add(5 * time.Second)
	for done := false; !done; {
		s := th.Snapshot()
		anyFiring := false
		done = true
		for _, sig := range s.Signals {
			anyFiring = anyFiring || sig.Firing
			done = done && sig.Evaluations >= evaluations
		}
		if s.GrowthHeld != anyFiring {
			t.Fatalf("snapshot shows growth held=%t with signals %+v", s.GrowthHeld, s.Signals)
		}
		if time.Now().After(deadline) {
			break // a loaded machine evaluates less often; the invariant has been checked all along
		}
	}
	th.Close()
	s := th.Snapshot()
	anyFiring := s.Signals[0].Firing || s.Signals[1].Firing || s.Signals[2].Firing
	if th.window.Held() != anyFiring || s.GrowthHeld != anyFiring {
		t.Fatalf("after Close: window held=%t, snapshot held=%t, signals %+v", th.window.Held(), s.GrowthHeld, s.Signals)
	}
}

// logBuffer collects what the fiber logger writes during a test.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func captureLog(t *testing.T) *logBuffer {
	b := &logBuffer{}
	log.SetOutput(b)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	return b
}

// TestInvalidQueryNeverFires: a query Prometheus rejects as bad_data (a typo) is a configuration bug, not
// backpressure. Under fail-closed it must not pin the window to its minimum, not even when errors that may
// pass (Prometheus unavailable) come in between and staleness runs out; it shows as invalid and is logged at
// error level once. Once the query evaluates, the signal works as any other.
func TestInvalidQueryNeverFires(t *testing.T) {
	logs := captureLog(t)
	synctest.Test(t, func(t *testing.T) {
		badData := &promv1.Error{Type: promv1.ErrBadData, Msg: `1:8: parse error: unexpected end of input`}
		unavailable := &promv1.Error{Type: promv1.ErrServer, Msg: "server error: 503"}
		var answer atomic.Pointer[promv1.Error] // the error Prometheus answers with, or nil to fire
		answer.Store(badData)
		th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64,
			FailMode: FailClosed, Staleness: 30 * time.Second,
			Signals: []Signal{{Name: "typo", Interval: 10 * time.Second, Func: func(context.Context) (bool, error) {
				if err := answer.Load(); err != nil {
					return false, err
				}
				return true, nil
			}}}})
		defer th.Close()
		synctest.Wait()
		check := func(when, verdict string, invalid bool) {
			t.Helper()
			s := th.Snapshot()
			if sig := s.Signals[0]; sig.Verdict != verdict || sig.Invalid != invalid || sig.Firing || s.GrowthHeld || sig.Backoffs != 0 {
				t.Fatalf("%s: %+v, growth held %t; want verdict %s, invalid %t, never firing", when, sig, s.GrowthHeld, verdict, invalid)
			}
		}
		check("first evaluation", "invalid", true)
		grow(t, th, 64)

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
			if w := th.Window(); w != 64 {
				t.Fatalf("window %d at %d s, want 64: an invalid query must not throttle", w, 10*i)
			}
		}
		if s := th.Snapshot().Signals[0]; s.Errors != 13 || s.LastError != badData.Error() || s.LastSuccess != nil {
			t.Fatalf("after 13 failed evaluations: %+v", s)
		}
		if n := strings.Count(logs.String(), "[Error] throttle: signal \"typo\": its function reports an invalid query, so the signal never fires"); n != 1 {
			t.Fatalf("invalid query logged at error level %d times, want once:\n%s", n, logs)
		}

		// Fixed (or the server now understands it): the signal fires and the window halves, as for any signal.
		answer.Store(nil)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		s := th.Snapshot()
		if sig := s.Signals[0]; !sig.Firing || sig.Invalid || sig.Verdict != "firing" || !s.GrowthHeld || s.Window != 32 || sig.LastSuccess == nil {
			t.Fatalf("query valid and firing: %+v, want firing, no longer invalid, window 32", s)
		}
		if !strings.Contains(logs.String(), `signal "typo" evaluates again`) {
			t.Fatalf("recovery not logged:\n%s", logs)
		}
		// Now the fail mode applies to errors again: a Prometheus down past staleness fails closed.
		answer.Store(unavailable)
		time.Sleep(40 * time.Second)
		synctest.Wait()
		if sig := th.Snapshot().Signals[0]; !sig.Firing || !sig.Stale || sig.Invalid {
			t.Fatalf("503s past staleness after a success: %+v, want stale and fail-closed", sig)
		}
	})
}

// TestInvalidQueryOverHTTP runs an invalid query through a real HTTP Prometheus API: 400 bad_data under
// fail-closed leaves the window free to grow and shows the signal as invalid, in the snapshot and the metrics.
// A 422 execution error, which depends on the data the query meets, is an error like any other: under
// fail-closed with no success yet it fires.
func TestInvalidQueryOverHTTP(t *testing.T) {
	logs := captureLog(t)
	var status atomic.Int32
	var body atomic.Value
	srv := fakeProm(t, &status, &body)
	start := func(code int, answer string) (*Throttler, *prometheus.Registry) {
		status.Store(int32(code))
		body.Store(answer)
		reg := prometheus.NewRegistry()
		th := NewThrottler(Config{Registerer: reg, Name: "api", PrometheusURL: srv.URL,
			Signals:  []Signal{{Name: "q", Query: "backend_busy >"}},
			Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, Staleness: 40 * time.Millisecond,
			FailMode: FailClosed, WindowMin: 2, WindowMax: 64})
		t.Cleanup(func() { th.Close() })
		waitFor(t, func() bool { return th.Snapshot().Signals[0].Evaluations >= 5 }) // well past staleness
		return th, reg
	}
	const (
		invalid = `fiberguard_throttle_signal_invalid{signal="q",throttle="api"}`
		firing  = `fiberguard_throttle_signal_firing{signal="q",throttle="api"}`
	)

	th, reg := start(400, `{"status":"error","errorType":"bad_data","error":"1:15: parse error: unexpected end of input"}`)
	grow(t, th, 64)
	s := th.Snapshot()
	if sig := s.Signals[0]; !sig.Invalid || sig.Verdict != "invalid" || sig.Firing || s.GrowthHeld || s.Window != 64 {
		t.Fatalf("400 bad_data under fail-closed: %+v, want invalid, not firing, window 64", s)
	}
	got := gather(t, reg)
	if got[invalid] != 1 || got[firing] != 0 {
		t.Errorf("%s = %v, %s = %v; want 1 and 0", invalid, got[invalid], firing, got[firing])
	}
	if v := got[`fiberguard_throttle_signal_evaluations_total{signal="q",throttle="api",verdict="invalid"}`]; v < 5 {
		t.Errorf("evaluations with verdict invalid = %v, want >= 5", v)
	}
	if want := `[Error] throttle: signal "q": query "backend_busy >" is invalid`; strings.Count(logs.String(), want) != 1 {
		t.Errorf("want one error-level line naming the query (%s), got:\n%s", want, logs)
	}
	th.Close()

	th, reg = start(422, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`)
	if sig := th.Snapshot().Signals[0]; sig.Invalid || sig.Verdict != "error" || !sig.Stale || !sig.Firing || th.Window() != 2 {
		t.Fatalf("422 execution error under fail-closed: %+v, window %d; want stale, firing, window 2", sig, th.Window())
	}
	if got := gather(t, reg); got[invalid] != 0 || got[firing] != 1 {
		t.Errorf("%s = %v, %s = %v after 422s; want 0 and 1", invalid, got[invalid], firing, got[firing])
	}
}
