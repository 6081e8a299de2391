package loadshed_test

import (
	"fmt"
	"io"
	"net/http/httptest"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/fiberguard/fiberguard/v3/loadshed"
	"github.com/gofiber/fiber/v3"
)

// In Fiber v3 the hooks take fiber.Ctx; the rest is loadshed's (its README and the v2 package's examples). Here
// the load is pinned above Upper: every request is shed but /healthz, answered by a custom OnReject.
func Example() {
	s := loadshed.NewShedder(loadshed.Config{
		Signal:         loadshedcore.SignalFunc(func() (float64, error) { return 1, nil }),
		Next:           func(c fiber.Ctx) bool { return c.Path() == "/healthz" },
		OnReject:       func(c fiber.Ctx) error { return c.Status(fiber.StatusTooManyRequests).SendString("busy") },
		DisableMetrics: true,
	})
	defer s.Close()
	app := fiber.New()
	app.Use(s.Handler())
	app.Get("/*", func(c fiber.Ctx) error { return c.SendString("ok") })
	for _, path := range []string{"/orders", "/healthz"} {
		resp, _ := app.Test(httptest.NewRequest("GET", path, nil))
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s: %d %q by %q\n", path, resp.StatusCode, body, resp.Header.Get("Fiberguard-Rejected-By"))
	}
	// Output:
	// /orders: 429 "busy" by "loadshed/default"
	// /healthz: 200 "ok" by ""
}
