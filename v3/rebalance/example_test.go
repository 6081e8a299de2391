package rebalance_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"

	"github.com/fiberguard/fiberguard/v3/rebalance"
	"github.com/gofiber/fiber/v3"
)

// In Fiber v3 Next takes fiber.Ctx and App is a v3 *fiber.App; the rest is rebalance's (its README and the v2
// package's examples). Here a node holds three times the cluster's average: a request is answered as usual and
// its connection closes, so its client reconnects through the load balancer; /healthz is left alone.
func Example() {
	app := fiber.New()
	r := rebalance.NewRebalancer(rebalance.Config{
		Cluster: func(context.Context) (rebalancecore.Cluster, error) {
			return rebalancecore.Cluster{Average: 100, Nodes: 4}, nil
		},
		Connections:    func() int { return 300 },
		Next:           func(c fiber.Ctx) bool { return c.Path() == "/healthz" },
		App:            app, // the loop ends when the app shuts down
		DisableMetrics: true,
	})
	defer r.Close()
	app.Use(r.Handler())
	app.Get("/*", func(c fiber.Ctx) error { return c.SendString("ok") })

	for r.Status().UpdatedAt == nil { // the first comparison runs at once, in the background
		time.Sleep(time.Millisecond)
	}
	for _, path := range []string{"/healthz", "/orders"} {
		resp, _ := app.Test(httptest.NewRequest("GET", path, nil))
		fmt.Printf("%s: %d, connection closed after it: %v\n", path, resp.StatusCode, resp.Close)
	}
	fmt.Println(r.Status().Decision)
	// Output:
	// /healthz: 200, connection closed after it: false
	// /orders: 200, connection closed after it: true
	// shedding
}
