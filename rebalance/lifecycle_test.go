package rebalance

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		src := func(context.Context) (Cluster, error) {
			calls.Add(1)
			return Cluster{Average: 40, Nodes: 3}, nil
		}
		r := NewRebalancer(testConfig(src, 60))
		synctest.Wait()
		if calls.Load() != 1 || r.Status().Decision != DecisionShedding {
			t.Fatalf("after start: %d readings, state %s; want the first reading at once", calls.Load(), r.Status().Decision)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if calls.Load() != 11 {
			t.Fatalf("after 10 intervals: %d readings, want 11", calls.Load())
		}
		r.Close()
		r.Close() // idempotent
		if r.budget.Load() != 0 {
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
		r := NewRebalancer(cfg)
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case <-r.done:
		default:
			t.Fatal("loop still running after Config.Context ended")
		}
		if r.budget.Load() != 0 {
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
		r := NewRebalancer(testConfig(src, 60))
		defer r.Close()
		start := time.Now()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		st := r.Status()
		if st.Decision != DecisionSourceError || st.SourceErrors != 1 || st.UpdatedAt == nil || !st.UpdatedAt.Equal(start.Add(time.Second)) {
			t.Fatalf("status %+v, want one source error at 1 s", st)
		}
	})
}

func TestAppShutdownStopsTheLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	r := NewRebalancer(Config{Cluster: fixed(40, 3), App: app, Registerer: prometheus.NewRegistry()})
	app.Use(r.Handler())
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	// Shut down only once the server serves: a Shutdown that comes before Serve would not stop it.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
	if err := app.Shutdown(); err != nil {
		t.Fatal(err)
	}
	<-served
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("loop still running 10 s after the app shut down")
	}
}

// TestContextDoneCloses: a done Config.Context ends everything the Rebalancer owns, as Close does: the loop, the
// default source's connections to Prometheus (no goroutine left), the metrics. The handler keeps answering.
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
	r := NewRebalancer(Config{
		PrometheusURL:  srv.URL,
		Connections:    func() int { return 60 },
		MinConnections: 10,
		Registerer:     reg,
		Context:        ctx,
	})
	app := newApp(r.Handler())
	waitFor(t, func() bool { return r.Status().Decision == DecisionShedding })
	if len(gather(t, reg, "default")) == 0 {
		t.Fatal("no metrics registered")
	}

	cancel()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("loop still running 10 s after Config.Context ended")
	}
	goleak.VerifyNone(t, before)
	if got := gather(t, reg, "default"); len(got) != 0 {
		t.Fatalf("metrics still registered after Config.Context ended: %v", got)
	}
	if got := countCloses(t, app, 5); got != 0 {
		t.Fatalf("%d responses closed after Config.Context ended, want 0", got)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close after the context ended: %v", err)
	}
}

// TestCloseConcurrentWithRequests: Close, called several times at once while requests are served, returns nil
// each time; every request is answered, and those after Close pass through without a shed.
func TestCloseConcurrentWithRequests(t *testing.T) {
	r := NewRebalancer(testConfig(fixed(40, 3), 60))
	app := newApp(r.Handler())
	waitFor(t, func() bool { return r.Status().Decision == DecisionShedding })

	stop := make(chan struct{})
	var served sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		served.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := request(app, false); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var closers sync.WaitGroup
	closed := make(chan error, 3)
	for range 3 {
		closers.Go(func() { closed <- r.Close() })
	}
	closers.Wait()
	close(stop)
	served.Wait()
	close(errs)
	close(closed)
	for err := range errs {
		t.Fatalf("request during Close: %v", err)
	}
	for err := range closed {
		if err != nil {
			t.Fatalf("Close = %v, want nil", err)
		}
	}
	select {
	case <-r.done:
	default:
		t.Fatal("loop still running after Close returned")
	}
	if got := countCloses(t, app, 5); got != 0 {
		t.Fatalf("%d responses closed after Close, want 0", got)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close again = %v, want nil", err)
	}
}
