// Package rebalance moves keep-alive connections off a Fiber node that holds more than its share of the cluster's.
//
// A load balancer places only new connections, so after a rolling restart or a scale-out the long-lived keep-alive
// connections stay on the nodes that were up first. Once per interval each node compares its open connections with
// the cluster average (read from Prometheus, or from any ClusterSource); a node at or above the threshold answers a
// few requests normally but with "Connection: close", and those clients reconnect through the load balancer.
package rebalance

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/valyala/fasthttp"
)

// Rebalancer owns the background loop that compares this node with the cluster, and the handler that spends the
// shed budget. Create it with NewRebalancer, mount Handler, and call Close to stop the loop.
type Rebalancer struct {
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
	recent   *lowest
	shedding bool
	lastErr  string

	release   func() // frees what the default source holds
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// Status is a node's view of the cluster after its last interval.
type Status struct {
	// Decision is what the node decided and why.
	Decision Decision `json:"decision"`
	// Connections is the node's open connections at the last interval.
	Connections int `json:"connections"`
	// Counted is the number the decision used: the lowest count over Config.Window.
	Counted int `json:"counted"`
	// Average is the cluster's mean open connections per live node (0 when unknown).
	Average float64 `json:"average"`
	// Nodes is the number of live nodes in the reading.
	Nodes int `json:"nodes"`
	// Balance is (Counted - Average) / Average (0 when the average is unknown).
	Balance float64 `json:"balance"`
	// Budget is the number of connections granted for shedding in the last interval.
	Budget int `json:"budget"`
	// Shed is the number of connections closed since the start.
	Shed uint64 `json:"shed_total"`
	// SourceErrors is the number of failed readings since the start.
	SourceErrors uint64 `json:"source_errors_total"`
	// LastError is the latest source error, kept until a reading succeeds.
	LastError string `json:"last_error,omitempty"`
	// UpdatedAt is when the last interval ended.
	UpdatedAt time.Time `json:"updated_at"`

	known bool // Average and Balance hold a usable reading
}

// New creates a Rebalancer and returns its handler. Its background loop runs until Config.Context is done or
// Config.App shuts down; use NewRebalancer for a handle with Close and Status.
//
// New panics when the config is invalid, naming the field.
func New(config ...Config) fiber.Handler {
	return NewRebalancer(config...).Handler()
}

// NewRebalancer validates the config and starts the background loop; the first comparison runs at once. The loop
// stops on Close, when Config.Context is done, or when Config.App shuts down.
//
// NewRebalancer panics when the config is invalid, naming the field.
func NewRebalancer(config ...Config) *Rebalancer {
	cfg := configDefault(config...)
	cfg.validate()
	r := newRebalancer(cfg)
	r.start(cfg.Context)
	if cfg.App != nil {
		cfg.App.Hooks().OnShutdown(r.Close)
	}
	return r
}

// newRebalancer builds a Rebalancer from a filled, valid config without starting its loop.
func newRebalancer(cfg Config) *Rebalancer {
	r := &Rebalancer{
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
		recent:   newLowest(int(cfg.Window/cfg.Interval) + 1),
		done:     make(chan struct{}),
	}
	if r.source == nil {
		// A transport of its own, so that closing the Rebalancer leaves no idle connection (and goroutine) behind.
		transport := http.DefaultTransport.(*http.Transport).Clone()
		client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, RoundTripper: transport})
		if err != nil {
			panic("rebalance: Config.PrometheusURL: " + err.Error())
		}
		r.source = PromQL(v1.NewAPI(client), cfg.Query, cfg.TimestampQuery)
		r.release = transport.CloseIdleConnections
	}
	if cfg.App != nil {
		r.server.Store(cfg.App.Server())
	}
	r.status.Store(&Status{Decision: DecisionStarting, UpdatedAt: time.Now()})
	if !cfg.DisableMetrics {
		r.metrics = registerMetrics(cfg.Registerer, r)
	}
	return r
}

// start runs the loop until parent is done or Close is called.
func (r *Rebalancer) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	r.cancel = cancel
	go r.run(ctx)
}

// Handler returns the middleware. A request that finds budget left is answered as usual, with
// "Connection: close", so its client reconnects through the load balancer; a connection that closes anyway is
// never counted as shed. The handler takes no lock and allocates nothing.
func (r *Rebalancer) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if r.next != nil && r.next(c) {
			return c.Next()
		}
		if r.connections == nil && r.server.Load() == nil {
			r.server.CompareAndSwap(nil, c.App().Server())
		}
		err := c.Next()
		if r.budget.Load() > 0 {
			r.shedConnection(c.Context())
		}
		return err
	}
}

// shedConnection spends one unit of budget on the connection serving ctx, unless it closes anyway.
func (r *Rebalancer) shedConnection(ctx *fasthttp.RequestCtx) {
	if ctx.Request.Header.ConnectionClose() || ctx.Response.Header.ConnectionClose() {
		return
	}
	if r.budget.Add(-1) < 0 {
		return
	}
	ctx.SetConnectionClose()
	r.shed.Add(1)
}

// Status returns the node's state after its last interval.
func (r *Rebalancer) Status() Status {
	s := *r.status.Load()
	s.Shed = r.shed.Load()
	s.SourceErrors = r.errs.Load()
	return s
}

// Close stops the loop and waits for it to end: shedding stops and the metrics are unregistered. It is safe to
// call more than once; the handler keeps passing requests through afterwards.
func (r *Rebalancer) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		<-r.done
	})
	return nil
}

func (r *Rebalancer) localConnections() int {
	if r.connections != nil {
		return r.connections()
	}
	if s := r.server.Load(); s != nil {
		// fasthttp reports -1 before the server starts serving.
		return max(0, int(s.GetOpenConnectionsCount()))
	}
	return 0
}

// run is the background loop. When it ends, shedding stops and the metrics are unregistered, so that a later
// instance can register its own.
func (r *Rebalancer) run(ctx context.Context) {
	defer close(r.done)
	if r.release != nil {
		defer r.release()
	}
	defer r.metrics.unregister()
	defer r.budget.Store(0)
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		r.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// tick runs one interval: read the cluster, decide, and grant the budget.
func (r *Rebalancer) tick(ctx context.Context) {
	local := r.localConnections()
	counted := r.recent.add(local)

	qctx, cancel := context.WithTimeout(ctx, r.interval)
	reading, err := r.source(qctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	if err != nil {
		r.fail(err, local, counted, now)
		return
	}
	if r.lastErr != "" {
		log.Infof("rebalance: source recovered after: %s", r.lastErr)
		r.lastErr = ""
	}
	if reading.At.IsZero() {
		reading.At = now
	}

	d := r.policy.decide(counted, reading, now, r.shedding)
	r.shedding = d.decision == DecisionShedding
	r.budget.Store(int64(d.budget))

	s := &Status{Decision: d.decision, Connections: local, Counted: counted, Nodes: reading.Nodes, Budget: d.budget, UpdatedAt: now}
	if !math.IsNaN(d.balance) {
		s.Average, s.Balance, s.known = reading.Average, d.balance, true
	}
	r.status.Store(s)
}

// fail records a source error: shedding stops until a reading succeeds. The log gets the first error of a run
// and any different one, not one line per interval.
func (r *Rebalancer) fail(err error, local, counted int, now time.Time) {
	r.budget.Store(0)
	r.shedding = false
	r.errs.Add(1)
	msg := err.Error()
	if msg != r.lastErr {
		log.Warnf("rebalance: cluster average unavailable, not shedding: %s", msg)
	}
	r.lastErr = msg
	r.status.Store(&Status{Decision: DecisionSourceError, Connections: local, Counted: counted, LastError: msg, UpdatedAt: now})
}
