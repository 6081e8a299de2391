// Command v3 is a small Fiber v3 app with every fiberguard module wired in, from the v3 modules
// (github.com/fiberguard/fiberguard/v3/...). The demo gateway (examples/gateway) stays on Fiber v2; this shows the
// same API on v3, where only the Fiber types differ.
//
//	go run ./examples/v3                        # listens on 127.0.0.1:8081
//	FIBERGUARD_ADDR=127.0.0.1:0 go run ./examples/v3
//
// Routes: GET /work?ms=N (N ms of CPU behind the global loadshed and a throttle), ANY /proxy/* (proxy.Balancer
// over two in-process upstreams, picked by upstreampick), GET /status (every module's Status) and GET /metrics.
// rebalance is on when FIBERGUARD_PROMETHEUS_URL names the Prometheus that scrapes every node.
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"log"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fiberguard/fiberguard/examples/internal/demo"

	"github.com/fiberguard/fiberguard/v3/loadshed"
	"github.com/fiberguard/fiberguard/v3/rebalance"
	"github.com/fiberguard/fiberguard/v3/throttle"
	"github.com/fiberguard/fiberguard/v3/upstreampick"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/gofiber/fiber/v3/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
)

const defaultAddr = "127.0.0.1:8081"

// app is the built application with what stops it.
type app struct {
	fiber *fiber.App
	stops []func()
}

func (a *app) close() {
	for i := len(a.stops) - 1; i >= 0; i-- {
		a.stops[i]()
	}
	a.stops = nil
}

// observing is for the app's own pages, which no module sheds or moves.
func observing(c fiber.Ctx) bool { return c.Path() == "/status" || c.Path() == "/metrics" }

// newApp wires the four modules, top to bottom in the order a request meets them.
func newApp(getenv func(string) string) (*app, error) {
	a := &app{fiber: fiber.New(fiber.Config{AppName: "fiberguard v3 example"})}
	reg := prometheus.NewRegistry()
	status := map[string]func() any{}

	// loadshed: global, by this process's overload.
	shed := loadshed.NewShedder(loadshed.Config{Next: observing, Registerer: reg})
	a.stops = append(a.stops, func() { _ = shed.Close() })
	a.fiber.Use(shed.Handler())
	status["loadshed"] = func() any { return shed.Status() }

	// rebalance: global, when a Prometheus scrapes every node.
	if url := getenv("FIBERGUARD_PROMETHEUS_URL"); url != "" {
		rb := rebalance.NewRebalancer(rebalance.Config{Next: observing, App: a.fiber, PrometheusURL: url, Registerer: reg})
		a.stops = append(a.stops, func() { _ = rb.Close() })
		a.fiber.Use(rb.Handler())
		status["rebalance"] = func() any { return rb.Status() }
	}

	// throttle: /work, with an in-process trigger that fires while more than 4 requests are in /work.
	var inWork atomic.Int64
	th := throttle.NewThrottler(throttle.Config{Triggers: demo.WorkTrigger(&inWork), WindowMin: 2, WindowMax: 64, Registerer: reg})
	a.stops = append(a.stops, func() { _ = th.Close() })
	status["throttle"] = func() any { return th.Status() }
	a.fiber.Get("/work", th.Handler(), func(c fiber.Ctx) error {
		ms, err := strconv.Atoi(c.Query("ms", "5"))
		if err != nil || ms < 0 || ms > 1000 {
			return fiber.NewError(fiber.StatusBadRequest, "ms must be an integer in [0, 1000]")
		}
		inWork.Add(1)
		defer inWork.Add(-1)
		burn(time.Duration(ms) * time.Millisecond)
		return c.SendString("worked " + strconv.Itoa(ms) + "ms\n")
	})

	// upstreampick: /proxy/* through v3's proxy.Balancer to the nearest healthy upstream.
	var servers []string
	for _, name := range []string{"site-a", "site-b"} {
		addr, stop, err := demo.Upstream(name, "/proxy")
		if err != nil {
			a.close()
			return nil, err
		}
		a.stops = append(a.stops, stop)
		servers = append(servers, "http://"+addr)
	}
	picker := upstreampick.NewPicker(upstreampick.Config{
		Servers: servers, Registerer: reg,
		ConfigureClient: func(_ string, c *fasthttp.HostClient) { c.MaxIdleConnDuration = 100 * time.Millisecond },
	})
	a.stops = append(a.stops, func() { _ = picker.Close() })
	status["upstreampick"] = func() any { return picker.Status() }
	balancer := proxy.Balancer(proxy.Config{Client: picker.LBClient()})
	a.fiber.All("/proxy/*", func(c fiber.Ctx) error {
		err := balancer(c)
		if errors.Is(err, upstreampick.ErrNoUpstream) {
			return picker.Reject(c) // 503 with Retry-After and Fiberguard-Rejected-By, counted in Status
		}
		return err
	})

	a.fiber.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	a.fiber.Get("/status", func(c fiber.Ctx) error {
		out := make(map[string]any, len(status))
		for name, st := range status {
			out[name] = st()
		}
		return c.JSON(out)
	})
	return a, nil
}

func main() { demo.Main(run) }

// run serves the app on FIBERGUARD_ADDR until ctx ends.
func run(ctx context.Context, getenv func(string) string, logger *log.Logger) error {
	a, err := newApp(getenv)
	if err != nil {
		return err
	}
	defer a.close()
	return demo.Serve(ctx, getenv, logger, "fiberguard v3 example", "GET /work, /proxy/*, /status, /metrics", defaultAddr,
		func(ln net.Listener) error {
			return a.fiber.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
		},
		func() { _ = a.fiber.ShutdownWithTimeout(5 * time.Second) })
}

// burn hashes for about d of wall time: the example's stand-in for CPU-bound work.
func burn(d time.Duration) {
	var sum [sha256.Size]byte
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 64 {
			sum = sha256.Sum256(sum[:])
		}
	}
}
