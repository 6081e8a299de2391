package upstreampick_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"syscall"
	"time"

	"github.com/fiberguard/fiberguard/v3/upstreampick"
	"github.com/gofiber/fiber/v3"
)

// In Fiber v3 the hooks take fiber.Ctx; the rest is upstreampick's (its README and the v2 package's examples).
// Here the only upstream refuses every connection: once its health checks fail, requests get the custom
// OnReject at once, and /healthz, skipped by Next, is answered by the app.
func Example() {
	picker := upstreampick.NewPicker(upstreampick.Config{
		Servers:        []string{"10.0.1.10:8080"},
		HealthInterval: 20 * time.Millisecond,
		Dial:           func(context.Context, string) (net.Conn, error) { return nil, syscall.ECONNREFUSED },
		Next:           func(c fiber.Ctx) bool { return c.Path() == "/healthz" },
		OnReject:       func(c fiber.Ctx) error { return c.Status(fiber.StatusBadGateway).SendString("no site is up") },
		DisableMetrics: true,
	})
	defer func() { _ = picker.Close() }()
	for picker.Status().Upstreams[0].Healthy {
		time.Sleep(5 * time.Millisecond)
	}
	app := fiber.New()
	app.Use(picker.Handler())
	app.Get("/healthz", func(c fiber.Ctx) error { return c.SendString("ok") })
	show := func(path string) {
		resp, err := app.Test(httptest.NewRequest("GET", path, nil))
		if err != nil {
			fmt.Println(path, err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s: %d %q\n", path, resp.StatusCode, body)
	}
	show("/orders")
	show("/healthz")
	// Output:
	// /orders: 502 "no site is up"
	// /healthz: 200 "ok"
}
