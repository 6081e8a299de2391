package core

import (
	"fmt"

	"github.com/fiberguard/fiberguard/throttle/core/internal/metricsreg"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics exports an Engine's state. Gauges and counters are read from the Engine's own atomics at scrape
// time, so the request path pays for no metric of its own; evaluation durations go to a histogram.
type metrics struct {
	reg prometheus.Registerer
	// read returns the status and fills in every trigger's evaluations by verdict, under one lock.
	read      func(byVerdict [][numVerdicts]uint64) Status
	triggers  int
	window    *prometheus.Desc
	bounds    *prometheus.Desc
	inflight  *prometheus.Desc
	requests  *prometheus.Desc
	firing    *prometheus.Desc
	invalid   *prometheus.Desc
	evals     *prometheus.Desc
	errors    *prometheus.Desc
	backoffs  *prometheus.Desc
	durations *prometheus.HistogramVec
}

// registerMetrics registers the metrics of the throttler named name with these triggers on reg
// (prometheus.DefaultRegisterer when nil). It returns nil when they could not be registered (logged with warnf).
func registerMetrics(reg prometheus.Registerer, name string, triggers []Trigger, read func([][numVerdicts]uint64) Status, warnf func(format string, v ...any)) *metrics {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	labels := prometheus.Labels{"name": name}
	m := &metrics{
		reg:      reg,
		read:     read,
		triggers: len(triggers),
		window: prometheus.NewDesc("fiberguard_throttle_window",
			"Current concurrency window: requests admitted at once.", nil, labels),
		bounds: prometheus.NewDesc("fiberguard_throttle_window_bound",
			"Configured window bounds.", []string{"bound"}, labels),
		inflight: prometheus.NewDesc("fiberguard_throttle_in_flight",
			"Requests admitted and not yet completed.", nil, labels),
		requests: prometheus.NewDesc("fiberguard_throttle_requests_total",
			"Requests by admission decision.", []string{"decision"}, labels),
		firing: prometheus.NewDesc("fiberguard_throttle_trigger_firing",
			"1 while the trigger fires (including a stale trigger under fail-closed).", []string{"trigger"}, labels),
		invalid: prometheus.NewDesc("fiberguard_throttle_trigger_invalid",
			"1 while the trigger's query is invalid (Prometheus rejects it as bad_data, or it yields a range vector or a string): it does not fire until fixed.", []string{"trigger"}, labels),
		evals: prometheus.NewDesc("fiberguard_throttle_trigger_evaluations_total",
			"Trigger evaluations by verdict: firing, false, no_data, error or invalid.", []string{"trigger", "verdict"}, labels),
		errors: prometheus.NewDesc("fiberguard_throttle_trigger_errors_total",
			"Trigger evaluations that failed (query or function errors).", []string{"trigger"}, labels),
		backoffs: prometheus.NewDesc("fiberguard_throttle_backoffs_total",
			"Times the trigger halved the window.", []string{"trigger"}, labels),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "fiberguard_throttle_trigger_duration_seconds",
			Help:        "Duration of trigger evaluations (PromQL queries or functions).",
			ConstLabels: labels,
			Buckets:     []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"trigger"}),
	}
	if !metricsreg.Register(reg, m, fmt.Sprintf("throttle %q", name), "set Config.Name to tell instances apart", warnf) {
		return nil
	}
	return m
}

func (m *metrics) unregister() { m.reg.Unregister(m) }

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.window
	ch <- m.bounds
	ch <- m.inflight
	ch <- m.requests
	ch <- m.firing
	ch <- m.invalid
	ch <- m.evals
	ch <- m.errors
	ch <- m.backoffs
	m.durations.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	byVerdict := make([][numVerdicts]uint64, m.triggers)
	s := m.read(byVerdict)
	ch <- prometheus.MustNewConstMetric(m.window, prometheus.GaugeValue, float64(s.Window))
	ch <- prometheus.MustNewConstMetric(m.bounds, prometheus.GaugeValue, float64(s.WindowMin), "min")
	ch <- prometheus.MustNewConstMetric(m.bounds, prometheus.GaugeValue, float64(s.WindowMax), "max")
	ch <- prometheus.MustNewConstMetric(m.inflight, prometheus.GaugeValue, float64(s.InFlight))
	ch <- prometheus.MustNewConstMetric(m.requests, prometheus.CounterValue, float64(s.Admitted), "admitted")
	ch <- prometheus.MustNewConstMetric(m.requests, prometheus.CounterValue, float64(s.Rejected), "rejected")
	for i, sig := range s.Triggers {
		ch <- prometheus.MustNewConstMetric(m.firing, prometheus.GaugeValue, gauge(sig.Firing), sig.Name)
		ch <- prometheus.MustNewConstMetric(m.invalid, prometheus.GaugeValue, gauge(sig.Invalid), sig.Name)
		for v, n := range byVerdict[i] {
			ch <- prometheus.MustNewConstMetric(m.evals, prometheus.CounterValue, float64(n), sig.Name, Verdict(v).String())
		}
		ch <- prometheus.MustNewConstMetric(m.errors, prometheus.CounterValue, float64(sig.Errors), sig.Name)
		ch <- prometheus.MustNewConstMetric(m.backoffs, prometheus.CounterValue, float64(sig.Backoffs), sig.Name)
	}
	m.durations.Collect(ch)
}

func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
