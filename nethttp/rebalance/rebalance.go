// Package rebalance moves keep-alive connections off a net/http node that holds more than its share of the
// cluster's.
//
// A load balancer places only new connections, so after a rolling restart or a scale-out the long-lived keep-alive
// connections stay on the nodes that were up first. Once per interval each node compares its open connections with
// the cluster average (read from Prometheus, or from any ClusterSource); a node at or above the threshold answers a
// few requests normally but with "Connection: close", and net/http closes those connections after the response, so
// their clients reconnect through the load balancer.
//
// The node's open connections are counted through http.Server.ConnState, per connection, with no wrapper around
// the listener: set Config.App to the *http.Server before it serves, or assign Rebalancer.ConnState to the
// server's ConnState yourself, or give Config.Connections.
//
// The middleware never rejects a request, so unlike the suite's other middlewares it has no OnReject or
// RetryAfter and sets no Fiberguard-Rejected-By header: a shed request gets its usual answer, and only its
// connection closes after it. HTTP/2 requests are never shed: "Connection: close" means nothing on an HTTP/2
// stream, and closing the whole connection would cut its other streams.
//
// New and NewRebalancer do not block: they start one goroutine, whose first comparison runs at once; Status
// reports DecisionStarting (UpdatedAt nil) until it ends, within one Interval even when the source hangs.
package rebalance

import (
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/fiberguard/fiberguard/rebalance/core"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *http.Request) bool: nil
//   - App *http.Server: nil
//   - PrometheusURL string: ""
//   - Query string: DefaultQuery
//   - TimestampQuery string: DefaultTimestampQuery (when Query is DefaultQuery or empty)
//   - Cluster ClusterSource: nil (query PrometheusURL)
//   - Connections func() int: nil (the open connections of App, or of the Fiber app serving the first request)
//   - Interval time.Duration: 1 * time.Second
//   - Threshold float64: 0.2
//   - Target float64: 0
//   - ShedRate float64: 0.005
//   - MinConnections int: 50
//   - MaxAge time.Duration: 3 * Interval
//   - Window time.Duration: 5 * time.Second
//   - RoundTripper http.RoundTripper: nil (the Prometheus client's default transport)
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close, or until App shuts down)
type Config = core.Config[*http.Request, *http.Server]

// ConfigDefault is the default config. It has no source of the cluster average: set PrometheusURL or Cluster.
// MaxAge, left zero, follows Interval (3 * Interval).
var ConfigDefault = core.Defaults[*http.Request, *http.Server]()

// connectionClose is the header value of a shed response. It is shared by every response and its capacity equals
// its length, so an append by a later handler copies it instead of writing into it.
var connectionClose = []string{"close"}

// Rebalancer owns the background loop that compares this node with the cluster, the count of the node's open
// connections, and the handler that spends the shed budget. Create it with NewRebalancer, mount Handler, read
// Status, and call Close to stop the loop.
type Rebalancer struct {
	next        func(r *http.Request) bool
	connections func() int // Config.Connections
	engine      *core.Engine

	open atomic.Int64 // connections counted by ConnState
	seen atomic.Bool  // ConnState has counted a connection

	// unwired is set when nothing counts the connections but a ConnState the user may never wire; the first
	// request served before any ConnState call then logs that the node reports 0 connections.
	unwired bool
	warn    sync.Once
}

// New returns the middleware: NewRebalancer(config...).Handler(). Its background loop runs until Config.Context
// is done or Config.App shuts down (with neither, for the life of the process); use NewRebalancer for a handle
// with Status, ConnState and Close.
//
// New panics when the config is invalid, naming the field.
func New(config ...Config) func(http.Handler) http.Handler {
	return NewRebalancer(config...).Handler()
}

// NewRebalancer fills the config's zero fields from ConfigDefault, validates it and starts the background loop;
// the first comparison runs at once, and NewRebalancer returns without waiting for it. The loop stops on Close,
// when Config.Context is done, or when Config.App shuts down (http.Server.Shutdown; Server.Close runs no
// shutdown hook, so call Close after it).
//
// With Config.App set and Config.Connections nil, NewRebalancer counts App's connections: it sets App.ConnState
// to Rebalancer.ConnState followed by the hook App.ConnState held, if any. Call it before App serves: net/http
// reads ConnState without a lock, and connections accepted earlier would never be counted. Config.Connections,
// when set, is the count instead, and App's ConnState is left alone.
//
// NewRebalancer panics when the config is invalid, naming the field; App is then left as it was.
func NewRebalancer(config ...Config) *Rebalancer {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
	}
	cfg = cfg.WithDefaults(ConfigDefault)
	r := &Rebalancer{
		next:        cfg.Next,
		connections: cfg.Connections,
		unwired:     cfg.App == nil && cfg.Connections == nil,
	}
	app := cfg.App
	cfg.Connections = r.localConnections
	r.engine = core.NewEngine(cfg, nil) // validates: panics before App is touched
	if app != nil {
		if r.connections == nil {
			if prev := app.ConnState; prev != nil {
				app.ConnState = func(c net.Conn, s http.ConnState) {
					r.ConnState(c, s)
					prev(c, s)
				}
			} else {
				app.ConnState = r.ConnState
			}
		}
		app.RegisterOnShutdown(func() { _ = r.Close() })
	}
	r.engine.Start()
	return r
}

// Handler returns the middleware; every call returns an equivalent one over the same state. A request that finds
// budget left is answered by next as usual, with "Connection: close" set on its response before next runs, so
// net/http closes the connection after the response and the client reconnects through the load balancer. Never
// shed, and never counted: a request skipped by Config.Next, a request whose connection closes anyway (it says
// "Connection: close", or is HTTP/1.0 without keep-alive), and an HTTP/2 request. No request is rejected. The
// handler takes no lock and allocates nothing on its pass-through path; after Close it passes every request
// through.
//
// The decision comes before next runs, because the header must be set before next writes the response: a
// handler that closes the connection itself (its own "Connection: close") after a shed was granted spends that
// shed.
func (r *Rebalancer) Handler() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return &handler{engine: r.engine, skip: r.next, next: next, unwired: r.unwired, r: r}
	}
}

// handler is the middleware around one next handler. It is a struct rather than an http.HandlerFunc closure so
// that a request costs one indirect call, and it holds what every request reads so that it reads one object.
type handler struct {
	engine  *core.Engine
	skip    func(r *http.Request) bool // Config.Next
	next    http.Handler
	unwired bool
	r       *Rebalancer
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h.skip != nil && h.skip(req) {
		h.next.ServeHTTP(w, req)
		return
	}
	if h.unwired && !h.r.seen.Load() {
		h.r.warn.Do(h.r.warnUnwired)
	}
	// HTTP/2 has no per-request connection close: the header would be dropped, yet the budget spent.
	if req.ProtoMajor < 2 && h.engine.Shed(req.Close) {
		w.Header()["Connection"] = connectionClose
	}
	h.next.ServeHTTP(w, req)
}

// ConnState counts the open connections of a server: NewRebalancer installs it on Config.App. Without
// Config.App, assign it to the server's ConnState (or call it from the hook there) before the server serves. A
// connection counts from StateNew until StateClosed or StateHijacked (a hijacked connection is no longer the
// server's, and net/http reports no close for it). HTTP/2 connections are counted too, though never shed.
func (r *Rebalancer) ConnState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		r.open.Add(1)
		if !r.seen.Load() {
			r.seen.Store(true)
		}
	case http.StateClosed, http.StateHijacked:
		r.open.Add(-1)
	}
}

// localConnections is this node's open connections: from Config.Connections, or as ConnState counted them.
func (r *Rebalancer) localConnections() int {
	if r.connections != nil {
		return r.connections()
	}
	// A connection accepted before ConnState was installed is seen closing but never opening.
	return max(0, int(r.open.Load()))
}

// warnUnwired says once that the node counts no connections, so that a missing ConnState is not a silent no-op.
func (r *Rebalancer) warnUnwired() {
	if r.seen.Load() {
		return
	}
	log.Printf("[Warn] rebalance %q: serving requests but counting no connections (0): set Config.App to the "+
		"*http.Server, assign Rebalancer.ConnState to its ConnState, or set Config.Connections", r.engine.Status().Name)
}

// Status returns the node's view after its last interval: a fresh value, safe to call concurrently.
func (r *Rebalancer) Status() core.Status {
	return r.engine.Status()
}

// Close stops the loop and waits for it to end: shedding stops, the metrics are unregistered, and the idle
// connections of the Rebalancer's own Prometheus transport are closed. It is idempotent, always returns nil, and
// is safe to call while requests are served: the handler passes them through afterwards, unshed. ConnState goes
// on counting.
func (r *Rebalancer) Close() error {
	return r.engine.Close()
}
