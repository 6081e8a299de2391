package rebalance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"

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
		Cluster: func(context.Context) (rebalancecore.Cluster, error) {
			return rebalancecore.Cluster{Average: 400, Nodes: 3}, nil
		},
		Connections:    func() int { return 600 },
		DisableMetrics: true,
	})
	defer r.Close()

	app := fiber.New()
	app.Use(r.Handler())

	for r.Status().UpdatedAt == nil { // the first comparison runs at once, in the background
		time.Sleep(time.Millisecond)
	}
	s := r.Status()
	fmt.Printf("%s: balance %.2f, %d connections to hand back this second\n", s.Decision, s.Balance, s.Budget)
	// Output: shedding: balance 0.50, 2 connections to hand back this second
}

// Status is JSON-ready: updated_at is null until the first interval ends.
func ExampleRebalancer_Status() {
	answer := make(chan struct{})
	r := rebalance.NewRebalancer(rebalance.Config{
		Name: "api",
		// A source that answers once told to, so that the first Status comes before the first interval ends.
		Cluster: func(ctx context.Context) (rebalancecore.Cluster, error) {
			select {
			case <-answer:
			case <-ctx.Done():
			}
			return rebalancecore.Cluster{Average: 400, Nodes: 3}, nil
		},
		Connections:    func() int { return 420 },
		Interval:       time.Minute,
		DisableMetrics: true,
	})
	defer r.Close()

	b, _ := json.Marshal(r.Status())
	fmt.Println(string(b))

	close(answer)
	for r.Status().UpdatedAt == nil {
		time.Sleep(time.Millisecond)
	}
	s := r.Status()
	fmt.Printf("%s: %s at balance %.2f, updated %v\n", s.Name, s.Decision, s.Balance, s.UpdatedAt != nil)
	// Output:
	// {"name":"api","updated_at":null,"decision":"starting","connections":0,"counted":0,"average":0,"nodes":0,"balance":0,"budget":0,"shed":0,"source_errors":0}
	// api: balanced at balance 0.05, updated true
}

// Config.Context ends the background loop with the rest of the program, without keeping the handle.
func ExampleNew_context() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop() // the loop ends, its metrics are unregistered

	app := fiber.New()
	app.Use(rebalance.New(rebalance.Config{
		PrometheusURL: "http://prometheus:9090",
		Name:          "api", // the name label of the metrics, so a second instance can share the registry
		Context:       ctx,
	}))
}
