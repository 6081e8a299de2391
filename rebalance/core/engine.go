// Package core is the rebalance middleware without a web framework: the loop that compares this node's open
// connections with the cluster's average, the sources of that average (PromQL or any ClusterSource), the
// decision and its shed budget, the metrics and the Status. The Fiber adapters
// (github.com/fiberguard/fiberguard/rebalance for Fiber v2, github.com/fiberguard/fiberguard/v3/rebalance for
// Fiber v3) give it the node's connection count and ask it, once per response, whether to close the connection.
//
// Applications import an adapter, not this package.
package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Engine compares a node with its cluster once per interval and holds the shed budget the responses spend. Build
// it with NewEngine, run its loop with Start, ask Shed once per response and stop it with Close.
type Engine struct {
	name        string
	connections func() int
	source      ClusterSource
	policy      policy
	interval    time.Duration
	parent      context.Context
	log         Logger
	metrics     *metrics

	budget atomic.Int64 // connections still to shed this interval
	shed   atomic.Uint64
	errs   atomic.Uint64
	status atomic.Pointer[Status]

	// mu makes one interval run at a time, whether the loop or a caller of Evaluate runs it, and guards the
	// state the intervals carry over.
	mu       sync.Mutex
	recent   *window
	shedding bool
	lastErr  string
	stopped  bool // once the engine is closed, no interval grants a budget

	release   func() // closes the idle connections of the default source's own transport
	life      sync.Mutex
	started   bool
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// NewEngine validates cfg (see Validate; fill it first with WithDefaults) and builds an Engine with no budget,
// whose metrics are registered; its loop waits for Start. It reads the fields that carry no framework type;
// Config.Connections nil reads 0. log receives the engine's log lines (nil: the standard library's log).
func NewEngine[C, A any](cfg Config[C, A], log Logger) *Engine {
	cfg.Validate()
	e := &Engine{
		name:        cfg.Name,
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
		parent:   cfg.Context,
		log:      log,
		recent:   newWindow(int(cfg.Window/cfg.Interval) + 1),
		release:  func() {},
		done:     make(chan struct{}),
	}
	if e.connections == nil {
		e.connections = func() int { return 0 }
	}
	if e.log == nil {
		e.log = stdLogger{}
	}
	if e.source == nil {
		e.source, e.release = prometheusSource(cfg.PrometheusURL, cfg.RoundTripper, cfg.Query, cfg.TimestampQuery)
	}
	e.status.Store(&Status{Decision: DecisionStarting})
	if !cfg.DisableMetrics {
		reg := cfg.Registerer
		if reg == nil {
			reg = prometheus.DefaultRegisterer
		}
		e.metrics = registerMetrics(reg, cfg.Name, e, e.log)
	}
	return e
}

// Start runs the loop in one goroutine: the first interval at once, then one per Config.Interval, until Close
// or until Config.Context is done. Later calls, and calls after Close, do nothing.
func (e *Engine) Start() {
	e.life.Lock()
	defer e.life.Unlock()
	if e.started {
		return
	}
	e.started = true
	parent := e.parent
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	e.cancel = cancel
	go e.run(ctx)
}

// Close stops the loop and waits for it to end: shedding stops, the metrics are unregistered, and the idle
// connections of the engine's own Prometheus transport are closed. It is idempotent, always returns nil, and is
// safe to call while Shed is called. An engine that was never started is closed the same way.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.life.Lock()
		started := e.started
		e.started = true // a later Start does nothing
		e.life.Unlock()
		if started {
			e.cancel()
			<-e.done
			return
		}
		e.stop()
	})
	return nil
}

// Done is closed once the engine has stopped: by Close, or when Config.Context is done.
func (e *Engine) Done() <-chan struct{} {
	return e.done
}

// Shed answers, for the response being sent, whether to close its connection so that its client reconnects
// through the load balancer; when it does, the connection is counted as shed. closing says the connection
// closes anyway (the request or the response carries "Connection: close"): it is never counted, and it spends no
// budget. Shed takes no lock and allocates nothing.
func (e *Engine) Shed(closing bool) bool {
	if closing || e.budget.Load() <= 0 {
		return false
	}
	if e.budget.Add(-1) < 0 {
		return false
	}
	e.shed.Add(1)
	return true
}

// stop ends what the engine owns, once: the budget, the metrics, the default source's idle connections.
func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	e.budget.Store(0)
	e.mu.Unlock()
	e.metrics.unregister()
	e.release()
	close(e.done)
}
