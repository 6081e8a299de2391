package loadshed_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/fiberguard/fiberguard/loadshed"
	"github.com/gofiber/fiber/v2"
)

// The default: shed by the CPU the process may use; a rejection is a 503 with Retry-After and
// Fiberguard-Rejected-By headers.
func Example() {
	app := fiber.New()
	app.Use(loadshed.New())
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("hello") })
	_ = app // app.Listen(":3000")
}

// A Shedder owns its sampler: Close stops it. Status feeds a status page.
func ExampleNewShedder() {
	s := loadshed.NewShedder(loadshed.Config{
		// A custom signal pinned above Upper, so every ordinary request is shed.
		Signal:         loadshedcore.SignalFunc(func() (float64, error) { return 0.97, nil }),
		Critical:       func(c *fiber.Ctx) bool { return c.Get("X-Priority") == "critical" },
		Next:           func(c *fiber.Ctx) bool { return c.Path() == "/healthz" },
		DisableMetrics: true,
	})
	defer s.Close()

	app := fiber.New()
	app.Use(s.Handler())
	app.Get("/*", func(c *fiber.Ctx) error { return c.SendString("ok") })

	for _, r := range []struct{ path, priority string }{{"/", ""}, {"/", "critical"}, {"/healthz", ""}} {
		req := httptest.NewRequest("GET", r.path, nil)
		req.Header.Set("X-Priority", r.priority)
		resp, _ := app.Test(req)
		fmt.Printf("%s priority=%q: %d Retry-After=%q Fiberguard-Rejected-By=%q\n", r.path, r.priority,
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Fiberguard-Rejected-By"))
	}
	st := s.Status()
	fmt.Printf("%s: load %.2f, rejected %d, critical admitted %d\n", st.Name, st.Load, st.Rejected, st.CriticalAdmitted)
	// Output:
	// / priority="": 503 Retry-After="1" Fiberguard-Rejected-By="loadshed/default"
	// / priority="critical": 200 Retry-After="" Fiberguard-Rejected-By=""
	// /healthz priority="": 200 Retry-After="" Fiberguard-Rejected-By=""
	// default: load 0.97, rejected 1, critical admitted 1
}

// OnReject answers a rejected request; the Retry-After and Fiberguard-Rejected-By headers are already set.
func ExampleConfig_onReject() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := fiber.New()
	app.Use(loadshed.New(loadshed.Config{
		Signal:     loadshedcore.SignalFunc(func() (float64, error) { return 1, nil }),
		Name:       "api",
		RetryAfter: 10 * time.Second,
		OnReject: func(c *fiber.Ctx) error {
			return c.Status(fiber.StatusTooManyRequests).JSON(fiber.Map{"error": "overloaded"})
		},
		DisableMetrics: true,
		Context:        ctx, // stops the sampler when done
	}))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })

	resp, _ := app.Test(httptest.NewRequest("GET", "/", nil))
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Fiberguard-Rejected-By"), string(body))
	// Output: 429 10 loadshed/api {"error":"overloaded"}
}

// Dry-run counts what would be rejected and serves everything.
func ExampleConfig_dryRun() {
	s := loadshed.NewShedder(loadshed.Config{
		Signal:         loadshedcore.SignalFunc(func() (float64, error) { return 1, nil }),
		DryRun:         true,
		DisableMetrics: true,
	})
	defer s.Close()
	app := fiber.New()
	app.Use(s.Handler())
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	resp, _ := app.Test(httptest.NewRequest("GET", "/", nil))
	fmt.Println(resp.StatusCode, s.Status().Rejected)
	// Output: 200 1
}

// Probability is the decision curve.
func ExampleProbability() {
	for _, load := range []float64{0.5, 0.90, 0.925, 0.95, 1} {
		fmt.Printf("%.3f → %.2f\n", load, loadshedcore.Probability(load, 0.90, 0.95))
	}
	// Output:
	// 0.500 → 0.00
	// 0.900 → 0.00
	// 0.925 → 0.50
	// 0.950 → 1.00
	// 1.000 → 1.00
}
