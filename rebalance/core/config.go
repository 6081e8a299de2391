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

// Config is the part of an adapter's Config that needs no Fiber type. Each field means what the field of the
// same name means in the adapters' Config (github.com/fiberguard/fiberguard/rebalance documents them), except
// Connections, which the adapter always sets, and Logger, which the adapter sets to its Fiber version's log.
type Config struct {
	PrometheusURL  string        // Prometheus scraping every node; PrometheusURL or Cluster must be set
	Query          string        // PromQL: one sample per live node, its open connections
	TimestampQuery string        // PromQL: the timestamps of Query's samples
	Cluster        ClusterSource // the cluster's reading instead of Prometheus
	Connections    func() int    // this node's open connections; nil reads 0
	Interval       time.Duration // how often the node compares itself and refills its budget
	Threshold      float64       // balance at or above which shedding starts
	Target         float64       // balance a shedding node sheds down to
	ShedRate       float64       // cap per interval: ceil(average * ShedRate)
	MinConnections int           // floor; negative: none
	MaxAge         time.Duration // a reading older than this is stale
	Window         time.Duration // how long a rise must last before it counts
	RoundTripper   http.RoundTripper
	Name           string
	Registerer     prometheus.Registerer // nil: prometheus.DefaultRegisterer
	DisableMetrics bool
	Context        context.Context // stops the loop when done
	Logger         Logger          // nil: the standard library's log package
}

// Logger receives the engine's few log lines: a source failing (once per kind of error), recovering, and metrics
// left unregistered.
type Logger interface {
	Infof(format string, v ...any)
	Warnf(format string, v ...any)
}

// Defaults are the default values of the adapters' ConfigDefault. MaxAge, left zero, follows Interval.
var Defaults = Config{
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

// WithDefaults returns c with its zero fields taken from def (an adapter's ConfigDefault): MaxAge from
// 3 * Interval, TimestampQuery only beside the default Query, Registerer from prometheus.DefaultRegisterer.
// Validate then checks the result.
func (c Config) WithDefaults(def Config) Config {
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

// Validate panics when a field of a filled config is out of range, naming the field of the adapters' Config:
// "rebalance: Config.<Field> must be ...".
func (c Config) Validate() {
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
