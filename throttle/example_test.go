package throttle_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fiberguard/fiberguard/throttle"
	"github.com/gofiber/fiber/v2"
)

// Throttle a backend by Prometheus triggers: the window halves while the backend's p99 latency is above 250 ms or
// its queue is longer than 100, and grows while neither fires.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops the trigger goroutines

	app := fiber.New()
	app.Use(throttle.New(throttle.Config{
		Context:       ctx,
		PrometheusURL: "http://127.0.0.1:9090",
		Queries: []string{
			`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="backend"}[1m]))) > 0.25`,
			`max(backend_queue_length) > bool 100`,
		},
		WindowMin: 10,
		WindowMax: 100,
	}))
}

// An in-process trigger: a local queue length, evaluated every 100 ms, no Prometheus needed. The Throttler handle
// exposes the window for a status page and stops its goroutine on Close.
func ExampleNewThrottler() {
	var queued atomic.Int64 // maintained by the application
	th := throttle.NewThrottler(throttle.Config{
		WindowMin:      10,
		WindowMax:      100,
		DisableMetrics: true,
		Triggers: []throttle.Trigger{{
			Name:     "queue",
			Interval: 100 * time.Millisecond,
			Func: func(context.Context) (bool, error) {
				return queued.Load() > 50, nil
			},
		}},
	})
	defer th.Close()

	app := fiber.New()
	app.Use(th.Handler())
	app.Get("/status", func(c *fiber.Ctx) error { return c.JSON(th.Status()) })

	s := th.Status()
	fmt.Printf("window %d in [%d, %d], trigger %s\n", s.Window, s.WindowMin, s.WindowMax, s.Triggers[0].Name)
	// Output: window 10 in [10, 100], trigger queue
}

// The AIMD core on its own: +1 per window's worth of completions while in use, halved by Backoff.
func ExampleWindow() {
	w := throttle.NewWindow(4, 8)
	fill := func() {
		for w.TryAcquire() {
		}
	}
	fill()
	for range 4 { // a full round of completions, each replaced by a new request
		w.Release()
		fill()
	}
	fmt.Println("after one round:", w.Size())
	fmt.Println("after a backoff:", w.Backoff())
	// Output:
	// after one round: 5
	// after a backoff: 4
}
