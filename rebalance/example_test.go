package rebalance_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fiberguard/fiberguard/rebalance"
	"github.com/gofiber/fiber/v2"
)

// Each node of the cluster mounts the middleware and lets Prometheus scrape its /metrics; the default query
// averages fiberguard_rebalance_open_connections over the nodes whose scrape succeeds.
func Example() {
	app := fiber.New()
	app.Use(rebalance.New(rebalance.Config{
		PrometheusURL: "http://prometheus:9090",
		App:           app, // counts the app's connections from the start; the loop stops with the app
	}))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("hello") })
	// app.Listen(":3000")
}

// A ClusterSource supplies the cluster average from anywhere; Status shows the node's view, for a status page.
func ExampleNewRebalancer() {
	r := rebalance.NewRebalancer(rebalance.Config{
		// Three live nodes averaging 400 open connections; this node holds 600.
		Cluster: func(context.Context) (rebalance.Cluster, error) {
			return rebalance.Cluster{Average: 400, Nodes: 3}, nil
		},
		Connections:    func() int { return 600 },
		DisableMetrics: true,
	})
	defer r.Close()

	app := fiber.New()
	app.Use(r.Handler())

	for r.Status().Decision == rebalance.DecisionStarting { // the first comparison runs at once, in the background
		time.Sleep(time.Millisecond)
	}
	s := r.Status()
	fmt.Printf("%s: balance %.2f, %d connections to hand back this second\n", s.Decision, s.Balance, s.Budget)
	// Output: shedding: balance 0.50, 2 connections to hand back this second
}
