package throttle

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// grow saturates the throttler's window until it reaches size (growth must not be held).
func grow(t *testing.T, th *Throttler, size int) {
	t.Helper()
	for round := 0; th.window.Size() < size; round++ {
		if round > 2*size { // each round grows the window by one unless growth is held
			drain(th.window)
			t.Fatalf("window stuck at %d while growing to %d: growth held (%+v)", th.window.Size(), size, th.Status())
		}
		saturate(th.window, th.window.Size())
	}
	drain(th.window)
	if th.window.Size() != size {
		t.Fatalf("grew to %d, want %d", th.window.Size(), size)
	}
}

func TestFiringHalvesOncePerEvaluation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var firing atomic.Bool
		th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64, Triggers: []Trigger{{
			Interval: 10 * time.Second,
			Func:     func(context.Context) (bool, error) { return firing.Load(), nil },
		}}})
		defer th.Close()
		synctest.Wait() // first evaluation: not firing
		grow(t, th, 32)

		firing.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if w := th.Status().Window; w != 16 {
			t.Fatalf("window %d after one firing evaluation, want 16", w)
		}
		// Thousands of requests complete between evaluations: the window neither halves again nor grows.
		saturate(th.window, 5000)
		drain(th.window)
		if w := th.Status().Window; w != 16 {
			t.Fatalf("window %d after requests while firing, want 16", w)
		}
		time.Sleep(20 * time.Second) // two more firing evaluations
		synctest.Wait()
		if w := th.Status().Window; w != 4 {
			t.Fatalf("window %d after three firing evaluations, want 4", w)
		}
		time.Sleep(20 * time.Second) // two more: clamped at min
		synctest.Wait()
		if w := th.Status().Window; w != 2 {
			t.Fatalf("window %d, want the minimum 2", w)
		}
		if b := th.Status().Triggers[0].Backoffs; b != 5 {
			t.Fatalf("%d backoffs, want 5 (one per firing evaluation)", b)
		}

		firing.Store(false)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		saturate(th.window, 2+3)
		if w := th.Status().Window; w != 4 {
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
		th := NewThrottler(Config{DisableMetrics: true, WindowMin: 4, WindowMax: 64, Interval: time.Second,
			Triggers: []Trigger{{Name: "a", Func: sig(&a)}, {Name: "b", Func: sig(&b)}}})
		defer th.Close()
		a.Store(true)
		b.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		a.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		saturate(th.window, 100)
		if w := th.Status().Window; w != 4 {
			t.Fatalf("window grew to %d while trigger b fires", w)
		}
		b.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		saturate(th.window, 4)
		if w := th.Status().Window; w != 5 {
			t.Fatalf("window %d once no trigger fires, want 5", w)
		}
		drain(th.window)
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
				th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64,
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
				defer th.Close()
				synctest.Wait() // t=0: not firing, so the window can grow
				grow(t, th, 64)
				th.window.Backoff() // 32: room to see halvings either way
				ready.Store(true)
				time.Sleep(10 * time.Second) // t=10: the last good value
				synctest.Wait()
				broken.Store(true)
				if tt.lastGood {
					if w := th.Status().Window; w != 16 {
						t.Fatalf("setup: window %d after one firing evaluation, want 16", w)
					}
					th.window.SetHold(true)
				}
				for i := range tt.wantWindow {
					time.Sleep(10 * time.Second) // errors at t=20, 30, 40, 50: 10 s .. 40 s after the last success
					synctest.Wait()
					s := th.Status()
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
	th := NewThrottler(Config{DisableMetrics: true, WindowMin: 2, WindowMax: 64, Interval: time.Hour,
		Triggers: []Trigger{{Name: "firing", Func: gated(goFiring, true)}, {Name: "calm", Func: gated(goCalm, false)}}})
	defer th.Close()
	calmPaused, resumeCalm := make(chan struct{}), make(chan struct{})
	th.beforeHold = func(trigger string) { // set before the gates open: the evaluations happen after this write
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
	for deadline := time.Now().Add(100 * time.Millisecond); !th.window.Held() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(resumeCalm)
	waitFor(t, func() bool {
		s := th.Status()
		return s.Triggers[0].Evaluations == 1 && s.Triggers[1].Evaluations == 1
	})

	s := th.Status()
	if !s.Triggers[0].Firing || s.Triggers[1].Firing || !s.GrowthHeld {
		t.Fatalf("after both evaluations: firing=%t calm=%t growth held=%t, want the hold on while a trigger fires",
			s.Triggers[0].Firing, s.Triggers[1].Firing, s.GrowthHeld)
	}
	saturate(th.window, 100)
	if w := th.Status().Window; w != 2 {
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
	th := NewThrottler(Config{DisableMetrics: true, Interval: time.Millisecond,
		Triggers: []Trigger{{Name: "a", Func: flipping(1)}, {Name: "b", Func: flipping(2)}, {Name: "c", Func: flipping(3)}}})
	defer th.Close()

	const evaluations = 200 // per trigger: enough flips that an unordered hold shows up
	deadline := time.Now().Add(5 * time.Second)
	for done := false; !done; {
		s := th.Status()
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
	th.Close()
	s := th.Status()
	anyFiring := s.Triggers[0].Firing || s.Triggers[1].Firing || s.Triggers[2].Firing
	if th.window.Held() != anyFiring || s.GrowthHeld != anyFiring {
		t.Fatalf("after Close: window held=%t, status held=%t, triggers %+v", th.window.Held(), s.GrowthHeld, s.Triggers)
	}
}
