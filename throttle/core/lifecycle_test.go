package core

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestCloseStopsTriggersAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{Interval: time.Second,
			Func: func(ctx context.Context) (bool, error) {
				calls.Add(1)
				<-ctx.Done() // Close must cancel an evaluation in progress
				return false, ctx.Err()
			}}}})
		synctest.Wait()
		e.Close()
		e.Close()
		n := calls.Load()
		time.Sleep(time.Minute)
		synctest.Wait()
		if calls.Load() != n {
			t.Fatal("trigger evaluated after Close")
		}
		if s := e.Status().Triggers[0]; s.Evaluations != 0 {
			t.Fatalf("an evaluation cut short by Close was recorded: %+v", s)
		}
	})
}

// TestContextDoneCloses: when Config.Context is done the Engine closes itself, as Close does: no trigger is
// evaluated any more, its goroutines are gone and its metrics are unregistered. A later Close is a no-op.
func TestContextDoneCloses(t *testing.T) {
	before := goleak.IgnoreCurrent()
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		e := newEngine(Config[any, any]{Context: ctx, Registerer: reg, Triggers: []Trigger{{Interval: time.Second,
			Func: func(context.Context) (bool, error) { calls.Add(1); return false, nil }}}})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d evaluations in 2 s at a 1 s interval, want 3", n)
		}
		if len(coretest.Gather(t, reg)) == 0 {
			t.Fatal("no metrics registered")
		}

		cancel()
		synctest.Wait() // the close started by the context has run to its end
		if got := coretest.Gather(t, reg); len(got) != 0 {
			t.Fatalf("metrics still registered once Config.Context is done: %v", got)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d evaluations, want 3: the trigger was evaluated after Config.Context was done", n)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("Close after the context closed the throttler: %v", err)
		}
	}) // returns once every goroutine started inside has exited
	goleak.VerifyNone(t, before)
}

// ownDone is a context with a Done channel of its own, as a framework's context may have: watching it takes a
// goroutine (the context package cannot hook into its cancellation).
type ownDone struct {
	context.Context
	done chan struct{}
}

func (c ownDone) Done() <-chan struct{} { return c.done }

// TestCloseWithContextStopsWatching: Close before Config.Context is done leaves nothing behind waiting for it.
func TestCloseWithContextStopsWatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := ownDone{context.Background(), make(chan struct{})} // never done
		e := newEngine(Config[any, any]{Context: ctx, DisableMetrics: true, Triggers: []Trigger{{Interval: time.Second,
			Func: func(context.Context) (bool, error) { return false, nil }}}})
		synctest.Wait()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}) // fails (deadlock) if a goroutine still waits for the context
}
