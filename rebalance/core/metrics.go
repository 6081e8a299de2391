package core

import (
	"fmt"
	"math"

	"github.com/fiberguard/fiberguard/rebalance/core/internal/metricsreg"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics exports an Engine's state. It reads the Engine's atomics and last Status at scrape time, so
// neither the loop nor the request path pays for a metric of its own.
type metrics struct {
	reg     prometheus.Registerer
	e       *Engine
	open    *prometheus.Desc
	average *prometheus.Desc
	nodes   *prometheus.Desc
	balance *prometheus.Desc
	shed    *prometheus.Desc
	errors  *prometheus.Desc
}

// registerMetrics registers e's metrics on reg, labelled name. A second instance of the same name on the same
// registry is logged and skipped, never a panic; it then returns nil.
func registerMetrics(reg prometheus.Registerer, name string, e *Engine, log Logger) *metrics {
	labels := prometheus.Labels{"name": name}
	m := &metrics{
		reg: reg,
		e:   e,
		open: prometheus.NewDesc("fiberguard_rebalance_open_connections",
			"Open connections of this node's server: the series the default query averages over the cluster.", nil, labels),
		average: prometheus.NewDesc("fiberguard_rebalance_cluster_average",
			"Mean open connections per live node, as last read (NaN when unknown).", nil, labels),
		nodes: prometheus.NewDesc("fiberguard_rebalance_cluster_nodes",
			"Live nodes in the last reading of the cluster.", nil, labels),
		balance: prometheus.NewDesc("fiberguard_rebalance_balance",
			"(local - average) / average open connections at the last interval (NaN when unknown).", nil, labels),
		shed: prometheus.NewDesc("fiberguard_rebalance_shed_total",
			"Keep-alive connections closed gracefully so that their clients reconnect elsewhere.", nil, labels),
		errors: prometheus.NewDesc("fiberguard_rebalance_source_errors_total",
			"Failed readings of the cluster average.", nil, labels),
	}
	if !metricsreg.Register(reg, m, fmt.Sprintf("rebalance %q", name),
		"this instance's metrics are not exported; set Config.Name to tell instances apart", log.Warnf) {
		return nil
	}
	return m
}

func (m *metrics) unregister() {
	if m != nil {
		m.reg.Unregister(m)
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.open
	ch <- m.average
	ch <- m.nodes
	ch <- m.balance
	ch <- m.shed
	ch <- m.errors
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.e.Status()
	average, balance := math.NaN(), math.NaN()
	if s.known {
		average, balance = s.Average, s.Balance
	}
	ch <- prometheus.MustNewConstMetric(m.open, prometheus.GaugeValue, float64(m.e.connections()))
	ch <- prometheus.MustNewConstMetric(m.average, prometheus.GaugeValue, average)
	ch <- prometheus.MustNewConstMetric(m.nodes, prometheus.GaugeValue, float64(s.Nodes))
	ch <- prometheus.MustNewConstMetric(m.balance, prometheus.GaugeValue, balance)
	ch <- prometheus.MustNewConstMetric(m.shed, prometheus.CounterValue, float64(s.Shed))
	ch <- prometheus.MustNewConstMetric(m.errors, prometheus.CounterValue, float64(s.SourceErrors))
}
