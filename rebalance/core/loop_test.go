package core

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// counting wraps src to count its readings.
func counting(src ClusterSource) (ClusterSource, *atomic.Int64) {
	var calls atomic.Int64
	return func(ctx context.Context) (Cluster, error) {
		calls.Add(1)
		return src(ctx)
	}, &calls
}

func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, calls := counting(fixed(40, 3))
		e := NewEngine(testConfig(src, 60), nil)
		synctest.Wait()
		if calls.Load() != 0 {
			t.Fatalf("%d readings before Start, want none", calls.Load())
		}
		e.Start()
		e.Start() // a second Start starts no second loop
		synctest.Wait()
		if calls.Load() != 1 || e.Status().Decision != DecisionShedding {
			t.Fatalf("after start: %d readings, state %s; want the first reading at once", calls.Load(), e.Status().Decision)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if calls.Load() != 11 {
			t.Fatalf("after 10 intervals: %d readings, want 11", calls.Load())
		}
		e.Close()
		e.Close() // idempotent
		if e.budget.Load() != 0 {
			t.Fatal("budget left after Close")
		}
		time.Sleep(10 * time.Second)
		if calls.Load() != 11 {
			t.Fatalf("%d readings after Close, want none", calls.Load()-11)
		}
	})
}

func TestLoopStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cfg := testConfig(fixed(40, 3), 60)
		cfg.Context = ctx
		e := NewEngine(cfg, nil)
		e.Start()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case <-e.Done():
		default:
			t.Fatal("loop still running after Config.Context ended")
		}
		if e.budget.Load() != 0 {
			t.Fatal("budget left after the loop ended")
		}
	})
}

func TestHungSourceTimesOutAfterOneInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := func(ctx context.Context) (Cluster, error) {
			<-ctx.Done() // a Prometheus that never answers
			return Cluster{}, ctx.Err()
		}
		e := NewEngine(testConfig(src, 60), nil)
		e.Start()
		defer e.Close()
		start := time.Now()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		st := e.Status()
		if st.Decision != DecisionSourceError || st.SourceErrors != 1 || st.UpdatedAt == nil || !st.UpdatedAt.Equal(start.Add(time.Second)) {
			t.Fatalf("status %+v, want one source error at 1 s", st)
		}
	})
}

// TestContextDoneCloses: a done Config.Context ends everything the engine owns, as Close does: the loop, the
// default source's connections to Prometheus (no goroutine left), the metrics, the budget.
func TestContextDoneCloses(t *testing.T) {
	now := time.Now()
	srv, _ := fakePrometheus(t, map[string]answer{
		DefaultQuery:          vectorAt(now, "40", "40", "40"),
		DefaultTimestampQuery: vectorAt(now, seconds(now), seconds(now), seconds(now)),
	})
	before := goleak.IgnoreCurrent() // the fake Prometheus's own
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := NewEngine(Config[any, any]{
		PrometheusURL:  srv.URL,
		Connections:    func() int { return 60 },
		MinConnections: 10,
		Registerer:     reg,
		Context:        ctx,
	}.WithDefaults(Defaults[any, any]()), nil)
	e.Start()
	waitFor(t, func() bool { return e.Status().Decision == DecisionShedding })
	if len(gather(t, reg, "default")) == 0 {
		t.Fatal("no metrics registered")
	}

	cancel()
	select {
	case <-e.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("loop still running 10 s after Config.Context ended")
	}
	goleak.VerifyNone(t, before)
	if got := gather(t, reg, "default"); len(got) != 0 {
		t.Fatalf("metrics still registered after Config.Context ended: %v", got)
	}
	if got := sheds(e, 5); got != 0 {
		t.Fatalf("%d shed after Config.Context ended, want 0", got)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close after the context ended: %v", err)
	}
}

// TestCloseBeforeStart: an engine closed before it ran unregisters its metrics and closes Done; Start and
// Evaluate afterwards do nothing.
func TestCloseBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, calls := counting(fixed(40, 3))
		cfg := testConfig(src, 60)
		reg := prometheus.NewRegistry()
		cfg.Registerer = reg
		e := NewEngine(cfg, nil)
		if len(gather(t, reg, "default")) == 0 {
			t.Fatal("no metrics registered")
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-e.Done():
		default:
			t.Fatal("Done still open after Close")
		}
		if got := gather(t, reg, "default"); len(got) != 0 {
			t.Fatalf("metrics still registered after Close: %v", got)
		}
		e.Start()
		e.Evaluate(context.Background())
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if calls.Load() != 0 || sheds(e, 5) != 0 || e.Status().Decision != DecisionStarting {
			t.Fatalf("%d readings, status %+v after Close; want none, no budget", calls.Load(), e.Status())
		}
	})
}

// TestCloseConcurrentWithShedAndEvaluate: Close, called several times at once while responses ask Shed and a
// caller runs intervals, returns nil each time; afterwards nothing is shed.
func TestCloseConcurrentWithShedAndEvaluate(t *testing.T) {
	e := NewEngine(testConfig(fixed(40, 3), 60), nil)
	e.Start()
	waitFor(t, func() bool { return e.Status().Decision == DecisionShedding })

	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 3 {
		busy.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.Shed(false)
			}
		})
	}
	busy.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.Evaluate(context.Background())
		}
	})
	var closers sync.WaitGroup
	closed := make(chan error, 3)
	for range 3 {
		closers.Go(func() { closed <- e.Close() })
	}
	closers.Wait()
	close(stop)
	busy.Wait()
	close(closed)
	for err := range closed {
		if err != nil {
			t.Fatalf("Close = %v, want nil", err)
		}
	}
	select {
	case <-e.Done():
	default:
		t.Fatal("loop still running after Close returned")
	}
	e.Evaluate(context.Background())
	if got := sheds(e, 5); got != 0 {
		t.Fatalf("%d shed after Close, want 0", got)
	}
}
