package core

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
)

// testDefaults are the adapters' ConfigDefault values, for engines built here; no request reaches their
// OnReject.
var testDefaults = Defaults[any, any](func(any) error { return nil })

// newEngine builds an Engine from cfg filled with the defaults, as the adapters do, logging to the standard log.
func newEngine(cfg Config[any, any]) *Engine { return newLoggedEngine(cfg, nil) }

// newLoggedEngine is newEngine logging to lg.
func newLoggedEngine(cfg Config[any, any], lg Logger) *Engine {
	return NewEngine(cfg.WithDefaults(testDefaults), lg)
}

// TestTryAcquireAdmitsIntoTheWindow: TryAcquire admits while fewer requests than the window are in flight, counts
// every decision, and the release it hands out gives one slot back.
func TestTryAcquireAdmitsIntoTheWindow(t *testing.T) {
	e := newEngine(Config[any, any]{WindowMin: 2, WindowMax: 2, DisableMetrics: true})
	defer e.Close()
	r1, ok1 := e.TryAcquire()
	r2, ok2 := e.TryAcquire()
	r3, ok3 := e.TryAcquire()
	if !ok1 || !ok2 || ok3 || r1 == nil || r2 == nil || r3 != nil {
		t.Fatalf("three acquisitions into a window of 2: ok %t %t %t, releases nil %t %t %t; want two admitted",
			ok1, ok2, ok3, r1 == nil, r2 == nil, r3 == nil)
	}
	if s := e.Status(); s.InFlight != 2 || s.Admitted != 2 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 2 in flight, 2 admitted, 1 rejected", s)
	}
	r1()
	if s := e.Status(); s.InFlight != 1 {
		t.Fatalf("in flight %d after one release, want 1", s.InFlight)
	}
	r4, ok4 := e.TryAcquire()
	if !ok4 {
		t.Fatal("no slot after a release")
	}
	r2()
	r4()
	if s := e.Status(); s.InFlight != 0 || s.Admitted != 3 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 0 in flight, 3 admitted, 1 rejected", s)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if release, ok := e.TryAcquire(); ok {
			release()
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per admission, want 0", allocs)
	}
}

// grow saturates the engine's window until it reaches size (growth must not be held).
func grow(t *testing.T, e *Engine, size int) {
	t.Helper()
	for round := 0; e.window.Size() < size; round++ {
		if round > 2*size { // each round grows the window by one unless growth is held
			drain(e.window)
			t.Fatalf("window stuck at %d while growing to %d: growth held (%+v)", e.window.Size(), size, e.Status())
		}
		saturate(e.window, e.window.Size())
	}
	drain(e.window)
	if e.window.Size() != size {
		t.Fatalf("grew to %d, want %d", e.window.Size(), size)
	}
}

func TestFiringHalvesOncePerEvaluation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var firing atomic.Bool
		e := newEngine(Config[any, any]{DisableMetrics: true, WindowMin: 2, WindowMax: 64, Triggers: []Trigger{{
			Interval: 10 * time.Second,
			Func:     func(context.Context) (bool, error) { return firing.Load(), nil },
		}}})
		defer e.Close()
		synctest.Wait() // first evaluation: not firing
		grow(t, e, 32)

		firing.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if w := e.Status().Window; w != 16 {
			t.Fatalf("window %d after one firing evaluation, want 16", w)
		}
		// Thousands of requests complete between evaluations: the window neither halves again nor grows.
		saturate(e.window, 5000)
		drain(e.window)
		if w := e.Status().Window; w != 16 {
			t.Fatalf("window %d after requests while firing, want 16", w)
		}
		time.Sleep(20 * time.Second) // two more firing evaluations
		synctest.Wait()
		if w := e.Status().Window; w != 4 {
			t.Fatalf("window %d after three firing evaluations, want 4", w)
		}
		time.Sleep(20 * time.Second) // two more: clamped at min
		synctest.Wait()
		if w := e.Status().Window; w != 2 {
			t.Fatalf("window %d, want the minimum 2", w)
		}
		if b := e.Status().Triggers[0].Backoffs; b != 5 {
			t.Fatalf("%d backoffs, want 5 (one per firing evaluation)", b)
		}

		firing.Store(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		saturate(e.window, 2+3)
		if w := e.Status().Window; w != 4 {
			t.Fatalf("window %d after two rounds once the trigger cleared, want 4", w)
		}
	})
}

func TestAnyTriggerFiringHoldsGrowth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a, b atomic.Bool
		sig := func(v *atomic.Bool) func(context.Context) (bool, error) {
			return func(context.Context) (bool, error) { return v.Load(), nil }
		}
		e := newEngine(Config[any, any]{DisableMetrics: true, WindowMin: 4, WindowMax: 64, Interval: time.Second,
			Triggers: []Trigger{{Name: "a", Func: sig(&a)}, {Name: "b", Func: sig(&b)}}})
		defer e.Close()
		a.Store(true)
		b.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		a.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		saturate(e.window, 100)
		if w := e.Status().Window; w != 4 {
			t.Fatalf("window grew to %d while trigger b fires", w)
		}
		b.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		saturate(e.window, 4)
		if w := e.Status().Window; w != 5 {
			t.Fatalf("window %d once no trigger fires, want 5", w)
		}
		drain(e.window)
	})
}

func TestStaleTriggerTakesTheFailMode(t *testing.T) {
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
				e := newEngine(Config[any, any]{DisableMetrics: true, WindowMin: 2, WindowMax: 64,
					Staleness: 30 * time.Second, FailMode: tt.mode,
					Triggers: []Trigger{{Interval: 10 * time.Second, Func: func(context.Context) (bool, error) {
						switch {
						case broken.Load():
							return false, errors.New("prometheus: connection refused")
						case !ready.Load():
							return false, nil
						}
						return tt.lastGood, nil
					}}}})
				defer e.Close()
				synctest.Wait() // t=0: not firing, so the window can grow
				grow(t, e, 64)
				e.window.Backoff() // 32: room to see halvings either way
				ready.Store(true)
				time.Sleep(10 * time.Second) // t=10: the last good value
				synctest.Wait()
				broken.Store(true)
				if tt.lastGood {
					if w := e.Status().Window; w != 16 {
						t.Fatalf("setup: window %d after one firing evaluation, want 16", w)
					}
					e.window.SetHold(true)
				}
				for i := range tt.wantWindow {
					time.Sleep(10 * time.Second) // errors at t=20, 30, 40, 50: 10 s .. 40 s after the last success
					synctest.Wait()
					s := e.Status()
					if s.Window != tt.wantWindow[i] || s.Triggers[0].Firing != tt.wantFiring[i] {
						t.Fatalf("error %d (%d s after the last success): window %d firing %t, want %d %t (%+v)",
							i+1, 10*(i+1), s.Window, s.Triggers[0].Firing, tt.wantWindow[i], tt.wantFiring[i], s.Triggers[0])
					}
					if stale := 10*(i+1) >= 30; s.Triggers[0].Stale != stale || s.Triggers[0].Held == stale {
						t.Fatalf("error %d: stale %t held %t, want stale %t", i+1, s.Triggers[0].Stale, s.Triggers[0].Held, stale)
					}
				}
			})
		})
	}
}

// TestGrowthHeldWhenTriggersFinishTogether replays the interleaving of a calm trigger finishing together with a
// firing one: the calm trigger has read every trigger's state (none fires yet) and is about to set the window's
// hold when the firing trigger's evaluation completes. Whatever the order, the hold left behind must agree with
// the states: held, since a trigger fires.
func TestGrowthHeldWhenTriggersFinishTogether(t *testing.T) {
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
	e := newEngine(Config[any, any]{DisableMetrics: true, WindowMin: 2, WindowMax: 64, Interval: time.Hour,
		Triggers: []Trigger{{Name: "firing", Func: gated(goFiring, true)}, {Name: "calm", Func: gated(goCalm, false)}}})
	defer e.Close()
	calmPaused, resumeCalm := make(chan struct{}), make(chan struct{})
	e.beforeHold = func(trigger string) { // set before the gates open: the evaluations happen after this write
		if trigger == "calm" {
			close(calmPaused)
			<-resumeCalm
		}
	}

	close(goCalm)
	<-calmPaused
	close(goFiring)
	// Unordered, the firing trigger sets the hold at once; ordered, it cannot apply its evaluation before the calm
	// one is done, and the wait runs out.
	for deadline := time.Now().Add(100 * time.Millisecond); !e.window.Held() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(resumeCalm)
	coretest.WaitFor(t, func() bool {
		s := e.Status()
		return s.Triggers[0].Evaluations == 1 && s.Triggers[1].Evaluations == 1
	})

	s := e.Status()
	if !s.Triggers[0].Firing || s.Triggers[1].Firing || !s.GrowthHeld {
		t.Fatalf("after both evaluations: firing=%t calm=%t growth held=%t, want the hold on while a trigger fires",
			s.Triggers[0].Firing, s.Triggers[1].Firing, s.GrowthHeld)
	}
	saturate(e.window, 100)
	if w := e.Status().Window; w != 2 {
		t.Fatalf("window grew to %d while a trigger fires, want 2", w)
	}
}

// TestStatusHoldAgreesWithTriggers flips three triggers at random as fast as they are evaluated while
// statuses are read: every status shows growth held exactly when one of its triggers fires, and so does the
// window once the triggers stop.
func TestStatusHoldAgreesWithTriggers(t *testing.T) {
	flipping := func(seed uint64) func(context.Context) (bool, error) {
		rng := rand.New(rand.NewPCG(seed, 1)) // used by this trigger's goroutine only
		return func(context.Context) (bool, error) { return rng.IntN(3) == 0, nil }
	}
	e := newEngine(Config[any, any]{DisableMetrics: true, Interval: time.Millisecond,
		Triggers: []Trigger{{Name: "a", Func: flipping(1)}, {Name: "b", Func: flipping(2)}, {Name: "c", Func: flipping(3)}}})
	defer e.Close()

	const evaluations = 200 // per trigger: enough flips that an unordered hold shows up
	deadline := time.Now().Add(5 * time.Second)
	for done := false; !done; {
		s := e.Status()
		anyFiring := false
		done = true
		for _, sig := range s.Triggers {
			anyFiring = anyFiring || sig.Firing
			done = done && sig.Evaluations >= evaluations
		}
		if s.GrowthHeld != anyFiring {
			t.Fatalf("status shows growth held=%t with triggers %+v", s.GrowthHeld, s.Triggers)
		}
		if time.Now().After(deadline) {
			break // a loaded machine evaluates less often; the invariant has been checked all along
		}
	}
	e.Close()
	s := e.Status()
	anyFiring := s.Triggers[0].Firing || s.Triggers[1].Firing || s.Triggers[2].Firing
	if e.window.Held() != anyFiring || s.GrowthHeld != anyFiring {
		t.Fatalf("after Close: window held=%t, status held=%t, triggers %+v", e.window.Held(), s.GrowthHeld, s.Triggers)
	}
}

// An Engine without a trigger can never back off: it says so once, as a warning naming it, and works as a
// fixed concurrency limit; one with a trigger says nothing of the kind.
func TestNoTriggerIsAWarning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config[any, any]
		warned bool
	}{
		{"none", Config[any, any]{Name: "bare", WindowMin: 1, WindowMax: 3}, true},
		{"func", Config[any, any]{Name: "steered", WindowMin: 1, WindowMax: 3, Triggers: []Trigger{{
			Name: "never", Func: func(context.Context) (bool, error) { return false, nil }}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lg logBuffer
			tc.cfg.DisableMetrics = true
			e := newLoggedEngine(tc.cfg, &lg)
			defer e.Close()
			const want = "has no trigger (Config.Triggers and Config.Queries are empty): nothing can make it back off"
			got := lg.String()
			if strings.Contains(got, want) != tc.warned {
				t.Fatalf("logged %q; want the warning: %v", got, tc.warned)
			}
			if tc.warned && !strings.HasPrefix(got, `[Warn] throttle: "bare" has no trigger`) ||
				tc.warned && !strings.Contains(got, "Config.WindowMax (3)") || strings.Count(got, want) > 1 {
				t.Fatalf("logged %q; want one warning naming the throttle and its WindowMax", got)
			}
			if _, ok := e.TryAcquire(); !ok {
				t.Fatal("the engine admits nothing")
			}
		})
	}
}
