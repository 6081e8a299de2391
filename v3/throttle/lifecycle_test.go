package throttle

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

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

// TestCloseConcurrentWithRequests calls Close from several goroutines while requests flow: every request is
// answered, before and after Close, every Close returns nil once the trigger goroutine is gone, and the window
// keeps admitting.
func TestCloseConcurrentWithRequests(t *testing.T) {
	before := goleak.IgnoreCurrent()
	reg := prometheus.NewRegistry()
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 2, Registerer: reg, Triggers: []Trigger{{Interval: time.Millisecond,
		Func: func(context.Context) (bool, error) { return false, nil }}}})
	app := blockingApp(th.Handler(), nil, nil)

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
				if r, err := get(app, "/ok"); err != nil || (r.code != fiber.StatusOK && r.code != fiber.StatusServiceUnavailable) {
					unexpected.Add(1)
				}
				answered.Add(1)
			}
		})
	}
	coretest.WaitFor(t, func() bool { return answered.Load() >= 100 })
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
	if n := len(coretest.Gather(t, reg)); n != 0 {
		t.Fatalf("%d series left once Close returned", n)
	}
	closed := answered.Load()
	coretest.WaitFor(t, func() bool { return answered.Load() >= closed+100 })
	close(stop)
	workers.Wait()

	if n := unexpected.Load(); n != 0 {
		t.Fatalf("%d requests failed or answered with neither 200 nor 503", n)
	}
	s := th.Status()
	if s.Admitted+s.Rejected != uint64(answered.Load()) || s.InFlight != 0 {
		t.Fatalf("status %+v after %d requests: want every request counted and none in flight", s, answered.Load())
	}
	if got := mustGet(t, app, "/ok").code; got != fiber.StatusOK {
		t.Fatalf("request after Close: status %d, want 200", got)
	}
	// app.Test serves through fasthttp, whose process-wide Date header updater starts with the first request.
	goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}
