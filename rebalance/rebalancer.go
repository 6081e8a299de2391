package rebalance

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Rebalancer owns the background loop that compares this node with the cluster, and the handler that spends the
// shed budget. Create it with NewRebalancer, mount Handler, read Status, and call Close to stop the loop.
type Rebalancer struct {
	name        string
	next        func(c *fiber.Ctx) bool
	connections func() int
	source      ClusterSource
	policy      policy
	interval    time.Duration
	metrics     *metrics

	server atomic.Pointer[fasthttp.Server] // the app's server, when connections are read from it
	budget atomic.Int64                    // connections still to shed this interval
	shed   atomic.Uint64
	errs   atomic.Uint64
	status atomic.Pointer[Status]

	// Owned by the loop goroutine.
	recent   *window
	shedding bool
	lastErr  string

	release   func() // closes the idle connections of the default source's own transport
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// newRebalancer builds a Rebalancer from a filled, valid config without starting its loop.
func newRebalancer(cfg Config) *Rebalancer {
	r := &Rebalancer{
		name:        cfg.Name,
		next:        cfg.Next,
		connections: cfg.Connections,
		source:      cfg.Cluster,
		policy: policy{
			threshold: cfg.Threshold,
			target:    cfg.Target,
			shedRate:  cfg.ShedRate,
			floor:     cfg.MinConnections,
			maxAge:    cfg.MaxAge,
		},
		interval: cfg.Interval,
		recent:   newWindow(int(cfg.Window/cfg.Interval) + 1),
		release:  func() {},
		done:     make(chan struct{}),
	}
	if r.source == nil {
		r.source, r.release = prometheusSource(cfg)
	}
	if cfg.App != nil {
		r.server.Store(cfg.App.Server())
	}
	r.status.Store(&Status{Decision: DecisionStarting})
	if !cfg.DisableMetrics {
		r.metrics = registerMetrics(cfg.Registerer, cfg.Name, r)
	}
	return r
}

// start runs the loop until parent (when not nil) is done or Close is called.
func (r *Rebalancer) start(parent context.Context) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	r.cancel = cancel
	go r.run(ctx)
}

// Close stops the loop and waits for it to end: shedding stops, the metrics are unregistered, and the idle
// connections of the Rebalancer's own Prometheus transport are closed. It is idempotent, always returns nil, and
// is safe to call while requests are served: the handler passes them through afterwards, unshed.
func (r *Rebalancer) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		<-r.done
	})
	return nil
}
