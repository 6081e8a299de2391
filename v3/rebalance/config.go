package rebalance

import (
	"context"
	"net/http"
	"time"

	"github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// Config defines the config for the rebalance middleware. The middleware never rejects a request, so it has no
// OnReject nor RetryAfter: a shed request is answered as usual and its connection closed after the response.
type Config struct {
	// Next defines a function to skip this middleware when it returns true. Skipped requests never carry a shed.
	//
	// Optional. Default: nil
	Next func(c fiber.Ctx) bool

	// App is the Fiber app the middleware serves. When set, its open connections are read from the start, and the
	// background loop stops when App shuts down. When nil, the app is learned from its first request through the
	// middleware (the node reports 0 connections until then).
	//
	// Optional. Default: nil
	App *fiber.App

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
	// Optional. Default: nil (the open connections of App's server, or of the app serving the first request)
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

// ConfigDefault is the default config. It has no source of the cluster average: set PrometheusURL or Cluster.
// MaxAge, left zero, follows Interval (3 * Interval).
var ConfigDefault = Config{
	Next:           nil,
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

// configDefault fills the zero fields of the given config from ConfigDefault; validate then checks it.
func configDefault(config ...Config) Config {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
	}
	cfg.setEngineConfig(cfg.engineConfig().WithDefaults(ConfigDefault.engineConfig()))
	return cfg
}

// validate panics when a field of a filled config is out of range, naming the field. Every field it checks is
// one the core shares: Next and App need no check.
func (cfg Config) validate() {
	cfg.engineConfig().Validate()
}

// engineConfig is the part of cfg the core reads.
func (cfg Config) engineConfig() core.Config {
	return core.Config{
		PrometheusURL:  cfg.PrometheusURL,
		Query:          cfg.Query,
		TimestampQuery: cfg.TimestampQuery,
		Cluster:        cfg.Cluster,
		Connections:    cfg.Connections,
		Interval:       cfg.Interval,
		Threshold:      cfg.Threshold,
		Target:         cfg.Target,
		ShedRate:       cfg.ShedRate,
		MinConnections: cfg.MinConnections,
		MaxAge:         cfg.MaxAge,
		Window:         cfg.Window,
		RoundTripper:   cfg.RoundTripper,
		Name:           cfg.Name,
		Registerer:     cfg.Registerer,
		DisableMetrics: cfg.DisableMetrics,
		Context:        cfg.Context,
	}
}

// setEngineConfig sets the fields of cfg that the core shares from c.
func (cfg *Config) setEngineConfig(c core.Config) {
	cfg.PrometheusURL = c.PrometheusURL
	cfg.Query = c.Query
	cfg.TimestampQuery = c.TimestampQuery
	cfg.Cluster = c.Cluster
	cfg.Connections = c.Connections
	cfg.Interval = c.Interval
	cfg.Threshold = c.Threshold
	cfg.Target = c.Target
	cfg.ShedRate = c.ShedRate
	cfg.MinConnections = c.MinConnections
	cfg.MaxAge = c.MaxAge
	cfg.Window = c.Window
	cfg.RoundTripper = c.RoundTripper
	cfg.Name = c.Name
	cfg.Registerer = c.Registerer
	cfg.DisableMetrics = c.DisableMetrics
	cfg.Context = c.Context
}
