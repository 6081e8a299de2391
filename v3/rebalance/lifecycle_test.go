package rebalance

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
)

func TestAppShutdownStopsTheLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	r := NewRebalancer(Config{Cluster: fixed(40, 3), App: app, Registerer: prometheus.NewRegistry()})
	app.Use(r.Handler())
	app.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true}) }()
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
	case <-r.engine.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("loop still running 10 s after the app shut down")
	}
}

// TestContextStopsTheLoop: Config.Context reaches the loop; the handler keeps answering, unshed.
func TestContextStopsTheLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Context = ctx
	r := NewRebalancer(cfg)
	app := newApp(r.Handler())
	waitFor(t, func() bool { return r.Status().Decision == DecisionShedding })
	cancel()
	select {
	case <-r.engine.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("loop still running 10 s after Config.Context ended")
	}
	if got := countCloses(t, app, 5); got != 0 {
		t.Fatalf("%d responses closed after Config.Context ended, want 0", got)
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
				if _, err := request(app, "/", false, nil); err != nil {
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
	case <-r.engine.Done():
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
