package core

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Bounds of the durations in Config. An interval runs two Prometheus queries, and evaluating faster than
// Prometheus scrapes only re-reads the same samples, so the floor is far below any useful scrape interval; the
// ceiling keeps 3 * Interval (the default MaxAge) from overflowing. The window is kept as one count per
// interval, so its length in intervals bounds that buffer.
const (
	minInterval        = 100 * time.Millisecond
	maxInterval        = 10 * time.Minute
	maxWindowIntervals = 1000
)

// Config defines the config for the rebalance middleware. The middleware never rejects a request, so it has no
// OnReject nor RetryAfter: a shed request is answered as usual and its connection closed after the response.
//
// C is the web framework's request context and A its app: an adapter names Config with its Fiber version's
// types (*fiber.Ctx and *fiber.App for Fiber v2). Callers without a framework use Config[any, any].
type Config[C any, A any] struct {
	// Next defines a function to skip this middleware when it returns true. Skipped requests never carry a shed.
	//
	// Optional. Default: nil
	Next func(c C) bool

	// App is what the middleware serves: a Fiber *fiber.App, or a net/http *http.Server. When set, its open
	// connections are counted from the start (net/http: through its ConnState hook), and the background loop stops
	// when App shuts down. When nil, a Fiber app is learned from its first request through the middleware (the node
	// reports 0 connections until then); on net/http, wire the Rebalancer's ConnState or set Connections.
	//
	// Optional. Default: nil
	App A

	// PrometheusURL is the address of the Prometheus server that scrapes every node, e.g.
	// "http://prometheus:9090". Either PrometheusURL or Cluster must be set.
	//
	// Optional. Default: ""
	PrometheusURL string

	// Query is the PromQL instant query that returns one sample per live node: that node's open connections.
	// The cluster average is their mean and the number of nodes their count.
	//
	// Optional. Default: DefaultQuery
	Query string

	// TimestampQuery is the PromQL instant query that returns, per live node, the timestamp (in seconds, as
	// timestamp() gives it) of the sample Query reads for that node; a scalar is taken as the timestamp of
	// every node. The reading is as old as the oldest of them, and Config.MaxAge applies to that age. It runs at
	// the same evaluation time as Query. It must be set when Query is: Prometheus stamps an instant query's
	// samples with the time of the query, so the age cannot be learned from Query's own result.
	//
	// Optional. Default: DefaultTimestampQuery (when Query is DefaultQuery or empty)
	TimestampQuery string

	// Cluster supplies the cluster average instead of Prometheus (another monitoring system, a membership
	// service, a test). It is called once per Interval from one goroutine, with a context that ends after Interval.
	//
	// Optional. Default: nil (query PrometheusURL)
	Cluster ClusterSource

	// Connections returns this node's open connections.
	//
	// Optional. Default: nil (the open connections of App, or of the Fiber app serving the first request)
	Connections func() int

	// Interval is how often the node compares itself with the cluster and refills its shed budget, between
	// 100ms and 10m.
	//
	// Optional. Default: 1 * time.Second
	Interval time.Duration

	// Threshold is the balance, (local - average) / average, at or above which the node starts to shed.
	//
	// Optional. Default: 0.2
	Threshold float64

	// Target is the balance a node that started shedding sheds down to before it stops. 0 sheds down to the
	// average, so the nodes that were under-loaded fill up too; Target = Threshold stops as soon as the node is back
	// under the threshold. Must lie in [0, Threshold].
	//
	// Optional. Default: 0
	Target float64

	// ShedRate caps the connections shed per Interval at ceil(average * ShedRate).
	//
	// Optional. Default: 0.005
	ShedRate float64

	// MinConnections is the floor: a node never sheds below it, so a node holding MinConnections or fewer does
	// not shed at all, and a node above it sheds at most down to it. A negative value means no floor.
	//
	// Optional. Default: 50
	MinConnections int

	// MaxAge is how old a reading of the average may be before it is stale and shedding stops, at least 100ms.
	// A Prometheus reading is as old as its oldest sample (see TimestampQuery), which is up to one scrape interval
	// old when fresh: MaxAge must exceed the scrape interval. The clocks of Prometheus and this node must agree to
	// well within MaxAge.
	//
	// Optional. Default: 3 * Interval
	MaxAge time.Duration

	// Window is how long a rise in this node's connections must last before it counts. The average trails the
	// local count by up to a scrape interval; over this window the node uses its lowest count, so the clients of a
	// stopped peer arriving here are not compared with an average that still counts the peer. Set it to at least
	// the scrape interval plus Interval. A fall counts at once, so shedding never overshoots because of it. A
	// value below Interval uses the current count alone; at most 1000 intervals.
	//
	// Optional. Default: 5 * time.Second
	Window time.Duration

	// RoundTripper carries the Prometheus client's requests (authentication, TLS, a proxy). The caller owns it:
	// Close leaves its idle connections alone. When nil, the Rebalancer uses a transport of its own with the
	// Prometheus client's default settings, and Close closes its idle connections.
	//
	// Optional. Default: nil (the Prometheus client's default transport)
	RoundTripper http.RoundTripper

	// Name identifies this instance: the `name` label of every metric and Status.Name. Instances registered on
	// one Registerer need distinct names. The rebalance middleware rejects nothing, so it sets no
	// Fiberguard-Rejected-By header.
	//
	// Optional. Default: "default"
	Name string

	// Registerer receives the fiberguard_rebalance_* metrics. A collector already registered (a second instance
	// of the same Name on the same registry) is logged and skipped.
	//
	// Optional. Default: nil (prometheus.DefaultRegisterer)
	Registerer prometheus.Registerer

	// DisableMetrics registers no metrics. The default Query reads fiberguard_rebalance_open_connections, so
	// with metrics disabled another Cluster source (or a Query over another metric) is needed.
	//
	// Optional. Default: false
	DisableMetrics bool

	// Context stops the background work when done, as Close does.
	//
	// Optional. Default: nil (runs until Close, or until App shuts down)
	Context context.Context
}

// Logger receives the engine's few log lines: a source failing (once per kind of error), recovering, and metrics
// left unregistered.
type Logger interface {
	Infof(format string, v ...any)
	Warnf(format string, v ...any)
}

// Defaults returns the default config, an adapter's ConfigDefault. It has no source of the cluster average: set
// PrometheusURL or Cluster. MaxAge, left zero, follows Interval (3 * Interval).
func Defaults[C, A any]() Config[C, A] {
	return Config[C, A]{
		Query:          DefaultQuery,
		TimestampQuery: DefaultTimestampQuery,
		Interval:       time.Second,
		Threshold:      0.2,
		Target:         0,
		ShedRate:       0.005,
		MinConnections: 50,
		Window:         5 * time.Second,
		Name:           "default",
	}
}

// WithDefaults returns c with its zero fields taken from def (an adapter's ConfigDefault): MaxAge from
// 3 * Interval, TimestampQuery only beside the default Query, Registerer from prometheus.DefaultRegisterer.
// App, Cluster, Connections, RoundTripper and Context stay as given: they are live objects of one caller, which
// a shared default must not hand to every instance. Validate then checks the result.
func (c Config[C, A]) WithDefaults(def Config[C, A]) Config[C, A] {
	if c.Next == nil {
		c.Next = def.Next
	}
	if c.Query == "" {
		c.Query = def.Query
	}
	if c.TimestampQuery == "" && c.Query == DefaultQuery {
		c.TimestampQuery = DefaultTimestampQuery
	}
	if c.Interval == 0 {
		c.Interval = def.Interval
	}
	if c.Threshold == 0 {
		c.Threshold = def.Threshold
	}
	if c.ShedRate == 0 {
		c.ShedRate = def.ShedRate
	}
	if c.MinConnections == 0 {
		c.MinConnections = def.MinConnections
	}
	if c.MaxAge == 0 {
		c.MaxAge = 3 * c.Interval
	}
	if c.Window == 0 {
		c.Window = def.Window
	}
	if c.Name == "" {
		c.Name = def.Name
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.DefaultRegisterer
	}
	return c
}

// Validate panics when a field of a filled config is out of range, naming the field:
// "rebalance: Config.<Field> must be ...". Next and App need no check.
func (c Config[C, A]) Validate() {
	if c.Cluster == nil {
		if c.PrometheusURL == "" {
			panic("rebalance: Config.PrometheusURL or Config.Cluster must be set")
		}
		u, err := url.Parse(c.PrometheusURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			panic(fmt.Sprintf("rebalance: Config.PrometheusURL must be an http(s) URL, got %q", c.PrometheusURL))
		}
		if c.TimestampQuery == "" {
			panic("rebalance: Config.TimestampQuery must be set with Config.Query: the timestamps of the samples " +
				"Query reads (see DefaultTimestampQuery)")
		}
	}
	if c.Interval < minInterval || c.Interval > maxInterval {
		panic(fmt.Sprintf("rebalance: Config.Interval must lie in [%v, %v], got %v", minInterval, maxInterval, c.Interval))
	}
	if !(c.Threshold > 0) || math.IsInf(c.Threshold, 0) {
		panic(fmt.Sprintf("rebalance: Config.Threshold must be a positive number, got %v", c.Threshold))
	}
	if !(c.Target >= 0 && c.Target <= c.Threshold) {
		panic(fmt.Sprintf("rebalance: Config.Target must lie in [0, Config.Threshold], got %v", c.Target))
	}
	if !(c.ShedRate > 0 && c.ShedRate <= 1) {
		panic(fmt.Sprintf("rebalance: Config.ShedRate must lie in (0, 1], got %v", c.ShedRate))
	}
	if c.MaxAge < minInterval {
		panic(fmt.Sprintf("rebalance: Config.MaxAge must be at least %v, got %v", minInterval, c.MaxAge))
	}
	if c.Window < 0 || c.Window/c.Interval > maxWindowIntervals {
		panic(fmt.Sprintf("rebalance: Config.Window must lie in [0, %d * Config.Interval], got %v at an Interval of %v",
			maxWindowIntervals, c.Window, c.Interval))
	}
	// A metric label value must be UTF-8: otherwise the collector fails to register.
	if !utf8.ValidString(c.Name) {
		panic(fmt.Sprintf("rebalance: Config.Name must be valid UTF-8, got %q", c.Name))
	}
}
