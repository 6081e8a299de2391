package throttle_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	throttlecore "github.com/fiberguard/fiberguard/throttle/core"

	"github.com/fiberguard/fiberguard/v3/throttle"
	"github.com/gofiber/fiber/v3"
)

// In Fiber v3 the hooks take fiber.Ctx; the rest is throttle's (its README and the v2 package's examples). Here
// a window of one request: while a slow request holds it, the next is answered by a custom OnReject, and a
// health check skips the throttle.
func Example() {
	th := throttle.NewThrottler(throttle.Config{
		WindowMin:      1,
		WindowMax:      1,
		DisableMetrics: true,
		Next:           func(c fiber.Ctx) bool { return c.Path() == "/healthz" },
		OnReject:       func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusTooManyRequests) },
		Triggers: []throttlecore.Trigger{{Name: "never", Interval: time.Hour,
			Func: func(context.Context) (bool, error) { return false, nil }}},
	})
	defer th.Close()
	held, release := make(chan struct{}), make(chan struct{})
	app := fiber.New()
	app.Use(th.Handler())
	app.Get("/slow", func(c fiber.Ctx) error { close(held); <-release; return c.SendString("done") })
	app.Get("/*", func(c fiber.Ctx) error { return c.SendString("ok") })

	slow := make(chan int)
	go func() {
		resp, _ := app.Test(httptest.NewRequest("GET", "/slow", nil), fiber.TestConfig{Timeout: 0})
		slow <- resp.StatusCode
	}()
	<-held
	for _, path := range []string{"/orders", "/healthz"} {
		resp, _ := app.Test(httptest.NewRequest("GET", path, nil))
		fmt.Printf("%s while /slow runs: %d\n", path, resp.StatusCode)
	}
	close(release)
	fmt.Printf("/slow: %d; window %d\n", <-slow, th.Status().Window)
	// Output:
	// /orders while /slow runs: 429
	// /healthz while /slow runs: 200
	// /slow: 200; window 1
}
