package throttle

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestCloseStopsTriggersAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		th := NewThrottler(Config{DisableMetrics: true, Triggers: []Trigger{{Interval: time.Second,
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
			t.Fatal("trigger evaluated after Close")
		}
		if s := th.Status().Triggers[0]; s.Evaluations != 0 {
			t.Fatalf("an evaluation cut short by Close was recorded: %+v", s)
		}
	})
}

func TestNewStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 100)
	h := New(Config{Context: ctx, DisableMetrics: true, Triggers: []Trigger{{Interval: time.Millisecond, Func: func(context.Context) (bool, error) {
		select {
		case calls <- struct{}{}:
		default:
		}
		return false, nil
	}}}})
	if h == nil {
		t.Fatal("New returned nil")
	}
	<-calls
	cancel()
	// goleak in TestMain fails the package if the trigger goroutine outlives the cancelled context.
}

// TestContextDoneCloses: when Config.Context is done the Throttler closes itself, as Close does: no trigger is
// evaluated any more, its goroutines are gone and its metrics are unregistered. A later Close is a no-op.
func TestContextDoneCloses(t *testing.T) {
	before := goleak.IgnoreCurrent()
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		th := NewThrottler(Config{Context: ctx, Registerer: reg, Triggers: []Trigger{{Interval: time.Second,
			Func: func(context.Context) (bool, error) { calls.Add(1); return false, nil }}}})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d evaluations in 2 s at a 1 s interval, want 3", n)
		}
		if len(gather(t, reg)) == 0 {
			t.Fatal("no metrics registered")
		}

		cancel()
		synctest.Wait() // the close started by the context has run to its end
		if got := gather(t, reg); len(got) != 0 {
			t.Fatalf("metrics still registered once Config.Context is done: %v", got)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d evaluations, want 3: the trigger was evaluated after Config.Context was done", n)
		}
		if err := th.Close(); err != nil {
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
		th := NewThrottler(Config{Context: ctx, DisableMetrics: true, Triggers: []Trigger{{Interval: time.Second,
			Func: func(context.Context) (bool, error) { return false, nil }}}})
		synctest.Wait()
		if err := th.Close(); err != nil {
			t.Fatal(err)
		}
	}) // fails (deadlock) if a goroutine still waits for the context
}

// TestCloseConcurrentWithRequests calls Close from several goroutines while requests flow: every request is
// answered, before and after Close, every Close returns nil once the trigger goroutine is gone, and the window
// keeps admitting.
func TestCloseConcurrentWithRequests(t *testing.T) {
	before := goleak.IgnoreCurrent()
	reg := prometheus.NewRegistry()
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 2, Registerer: reg, Triggers: []Trigger{{Interval: time.Millisecond,
		Func: func(context.Context) (bool, error) { return false, nil }}}})
	h := blockingApp(th.Handler(), nil, nil).Handler()

	var answered, unexpected atomic.Int64
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for range 4 {
		workers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code := do(h, "/ok").Response.StatusCode(); code != fiber.StatusOK && code != fiber.StatusServiceUnavailable {
					unexpected.Add(1)
				}
				answered.Add(1)
			}
		})
	}
	waitFor(t, func() bool { return answered.Load() >= 100 })
	var closers sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		closers.Go(func() { errs <- th.Close() })
	}
	closers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Close returned %v", err)
		}
	}
	if n := len(gather(t, reg)); n != 0 {
		t.Fatalf("%d series left once Close returned", n)
	}
	closed := answered.Load()
	waitFor(t, func() bool { return answered.Load() >= closed+100 })
	close(stop)
	workers.Wait()

	if n := unexpected.Load(); n != 0 {
		t.Fatalf("%d requests answered with neither 200 nor 503", n)
	}
	s := th.Status()
	if s.Admitted+s.Rejected != uint64(answered.Load()) || s.InFlight != 0 {
		t.Fatalf("status %+v after %d requests: want every request counted and none in flight", s, answered.Load())
	}
	if got := do(h, "/ok").Response.StatusCode(); got != fiber.StatusOK {
		t.Fatalf("request after Close: status %d, want 200", got)
	}
	goleak.VerifyNone(t, before)
}
