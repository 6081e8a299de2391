package throttle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"sync/atomic"
	"time"

	throttlecore "github.com/fiberguard/fiberguard/throttle/core"

	"github.com/fiberguard/fiberguard/throttle"
	"github.com/gofiber/fiber/v2"
)

// Throttle a backend by PromQL triggers: the window halves while the backend's p99 latency is above 250 ms or
// its queue is longer than 100, and grows while neither fires.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops the trigger goroutines and unregisters the metrics

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
// serves its Status to a status page and stops its goroutine on Close.
func ExampleNewThrottler() {
	var queued atomic.Int64 // maintained by the application
	th := throttle.NewThrottler(throttle.Config{
		WindowMin:      10,
		WindowMax:      100,
		DisableMetrics: true,
		Triggers: []throttlecore.Trigger{{
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

// The view for a status page: a fresh value, JSON-tagged. updated_at stays null until a trigger is evaluated.
func ExampleThrottler_Status() {
	th := throttle.NewThrottler(throttle.Config{Name: "api", WindowMin: 10, WindowMax: 100, DisableMetrics: true})
	defer th.Close()

	b, _ := json.Marshal(th.Status())
	fmt.Println(string(b))
	// Output: {"name":"api","updated_at":null,"window":10,"in_flight":0,"window_min":10,"window_max":100,"growth_held":false,"admitted":0,"rejected":0,"triggers":[]}
}

// A custom rejection: by the time OnReject runs, the middleware has set Retry-After and Fiberguard-Rejected-By.
func ExampleConfig_onReject() {
	app := fiber.New()
	app.Use(throttle.New(throttle.Config{
		Name:           "api",
		WindowMin:      1,
		WindowMax:      1,
		RetryAfter:     5 * time.Second,
		DisableMetrics: true,
		OnReject: func(c *fiber.Ctx) error {
			return c.Status(fiber.StatusTooManyRequests).JSON(fiber.Map{"error": "busy", "rejected_by": c.GetRespHeader("Fiberguard-Rejected-By")})
		},
	}))
	entered, release := make(chan struct{}), make(chan struct{})
	app.Get("/slow", func(c *fiber.Ctx) error {
		close(entered)
		<-release
		return c.SendString("done")
	})
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("hello") })

	// One request in /slow fills the window of 1; the next one is rejected.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = app.Test(httptest.NewRequest(fiber.MethodGet, "/slow", nil), -1)
	}()
	<-entered
	resp, err := app.Test(httptest.NewRequest(fiber.MethodGet, "/", nil))
	close(release)
	<-done
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Fiberguard-Rejected-By"))
	fmt.Println(string(body))
	// Output:
	// 429 5 throttle/api
	// {"error":"busy","rejected_by":"throttle/api"}
}
