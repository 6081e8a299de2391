package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	throttlecore "github.com/fiberguard/fiberguard/throttle/core"

	"github.com/fiberguard/fiberguard/throttle"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	demoWorkers      = 8
	demoQueueLimit   = 4
	defaultThrottleQ = "max(fiberguard_gateway_backend_queue) > 4"
)

// demoBackend is a service with a fixed number of workers; requests beyond them queue.
type demoBackend struct {
	workers chan struct{}
	queued  atomic.Int64
}

func (b *demoBackend) serve(ctx context.Context, d time.Duration) error {
	b.queued.Add(1)
	select {
	case b.workers <- struct{}{}:
		b.queued.Add(-1)
	case <-ctx.Done():
		b.queued.Add(-1)
		return ctx.Err()
	}
	defer func() { <-b.workers }()
	time.Sleep(d)
	return nil
}

// setupThrottle installs the throttle feature: GET /throttled?ms=N is served by a small simulated backend (8
// workers, each request holding one for N milliseconds, default 20) behind a throttle. By default the throttle's
// trigger is in process: it fires while more than 4 requests wait for a worker. With FIBERGUARD_PROMETHEUS_URL set,
// the trigger is a PromQL query instead, by default over the same queue as exported on /metrics (scrape the gateway
// to use it):
//
//	FIBERGUARD_PROMETHEUS_URL=http://127.0.0.1:9090
//	FIBERGUARD_THROTTLE_QUERY='max(fiberguard_gateway_backend_queue) > 4'
//
// /status["throttle"] shows the window, the in-flight count and the trigger's state.
func setupThrottle(app *fiber.App, e env) (func() any, func(), error) {
	backend := &demoBackend{workers: make(chan struct{}, demoWorkers)}
	queue := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fiberguard_gateway_backend_queue",
		Help: "Requests waiting for a worker of the demo backend behind GET /throttled.",
	}, func() float64 { return float64(backend.queued.Load()) })
	if err := e.registry.Register(queue); err != nil {
		return nil, nil, err
	}

	source := "in-process"
	sig := throttlecore.Trigger{
		Name:     "backend_queue",
		Interval: 250 * time.Millisecond,
		Func: func(context.Context) (bool, error) {
			return backend.queued.Load() > demoQueueLimit, nil
		},
	}
	promURL := e.getenv("FIBERGUARD_PROMETHEUS_URL")
	if promURL != "" {
		source = "prometheus"
		query := e.getenv("FIBERGUARD_THROTTLE_QUERY")
		if query == "" {
			query = defaultThrottleQ
		}
		sig = throttlecore.Trigger{Name: "backend_queue", Query: query, Interval: 5 * time.Second}
	}

	th, err := newThrottlerOrError(throttle.Config{
		Name:          "gateway",
		PrometheusURL: promURL,
		Triggers:      []throttlecore.Trigger{sig},
		WindowMin:     2,
		WindowMax:     64,
		Registerer:    e.registry,
	})
	if err != nil {
		e.registry.Unregister(queue)
		return nil, nil, err
	}

	app.Get("/throttled", th.Handler(), func(c *fiber.Ctx) error {
		ms, err := strconv.Atoi(c.Query("ms", "20"))
		if err != nil || ms < 0 || ms > 10000 {
			return fiber.NewError(fiber.StatusBadRequest, "ms must be an integer in [0, 10000]")
		}
		if err := backend.serve(c.UserContext(), time.Duration(ms)*time.Millisecond); err != nil {
			return fiber.NewError(fiber.StatusServiceUnavailable, err.Error())
		}
		return c.SendString("served in " + strconv.Itoa(ms) + "ms\n")
	})

	status := func() any {
		return struct {
			Source string `json:"source"`
			Queued int64  `json:"backend_queued"`
			throttlecore.Status
		}{source, backend.queued.Load(), th.Status()}
	}
	return status, func() { _ = th.Close(); e.registry.Unregister(queue) }, nil
}

// newThrottlerOrError turns NewThrottler's panic on bad configuration (a bad FIBERGUARD_PROMETHEUS_URL or query)
// into an error, so the gateway reports it instead of crashing with a stack trace.
func newThrottlerOrError(cfg throttle.Config) (th *throttle.Throttler, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return throttle.NewThrottler(cfg), nil
}
