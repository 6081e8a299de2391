package core

import (
	"fmt"

	"github.com/fiberguard/fiberguard/loadshed/core/internal/metricsreg"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics exports an Engine's state. It reads the Engine's own atomics at scrape time, so the request path
// pays for no metric of its own.
type metrics struct {
	reg       prometheus.Registerer
	e         *Engine
	load      *prometheus.Desc
	prob      *prometheus.Desc
	decisions *prometheus.Desc
	errors    *prometheus.Desc
	dryRun    *prometheus.Desc
	inFlight  *prometheus.Desc
	limit     *prometheus.Desc
}

func registerMetrics(reg prometheus.Registerer, name string, e *Engine) *metrics {
	labels := prometheus.Labels{"name": name}
	m := &metrics{
		reg: reg,
		e:   e,
		load: prometheus.NewDesc("fiberguard_loadshed_load",
			"The load the shedder decides by: it sheds from Lower and every ordinary request at Upper. The default signal reports the share it settled on shedding, placed on that band; other signals are smoothed.", nil, labels),
		prob: prometheus.NewDesc("fiberguard_loadshed_probability",
			"Current probability of rejecting a request, by priority.", []string{"priority"}, labels),
		decisions: prometheus.NewDesc("fiberguard_loadshed_requests_total",
			"Requests decided, by priority and decision (rejected decisions in dry-run mode are counted but served).",
			[]string{"priority", "decision"}, labels),
		errors: prometheus.NewDesc("fiberguard_loadshed_sampler_errors_total",
			"Load readings that failed; the last good load is kept.", nil, labels),
		dryRun: prometheus.NewDesc("fiberguard_loadshed_dry_run",
			"1 when the shedder only counts its decisions.", nil, labels),
		inFlight: prometheus.NewDesc("fiberguard_loadshed_in_flight",
			"Requests admitted whose handlers have not returned.", nil, labels),
		limit: prometheus.NewDesc("fiberguard_loadshed_in_flight_limit",
			"The in-flight limit above which ordinary requests are rejected (critical ones above twice it); 0 while none applies.", nil, labels),
	}
	if !metricsreg.Register(reg, m, fmt.Sprintf("loadshed %q", name), "set Config.Name to tell instances apart", e.log.Warnf) {
		return nil
	}
	return m
}

func (m *metrics) unregister() { m.reg.Unregister(m) }

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.load
	ch <- m.prob
	ch <- m.decisions
	ch <- m.errors
	ch <- m.dryRun
	ch <- m.inFlight
	ch <- m.limit
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.e.Status()
	dry := 0.0
	if st.DryRun {
		dry = 1
	}
	ch <- prometheus.MustNewConstMetric(m.load, prometheus.GaugeValue, st.Load)
	ch <- prometheus.MustNewConstMetric(m.prob, prometheus.GaugeValue, st.Probability, "normal")
	ch <- prometheus.MustNewConstMetric(m.prob, prometheus.GaugeValue, st.CriticalProbability, "critical")
	for _, d := range []struct {
		priority, decision string
		n                  uint64
	}{
		{"normal", "admitted", st.Admitted},
		{"normal", "rejected", st.Rejected},
		{"critical", "admitted", st.CriticalAdmitted},
		{"critical", "rejected", st.CriticalRejected},
	} {
		ch <- prometheus.MustNewConstMetric(m.decisions, prometheus.CounterValue, float64(d.n), d.priority, d.decision)
	}
	ch <- prometheus.MustNewConstMetric(m.errors, prometheus.CounterValue, float64(st.SamplerErrors))
	ch <- prometheus.MustNewConstMetric(m.dryRun, prometheus.GaugeValue, dry)
	ch <- prometheus.MustNewConstMetric(m.inFlight, prometheus.GaugeValue, float64(st.InFlight))
	ch <- prometheus.MustNewConstMetric(m.limit, prometheus.GaugeValue, float64(st.Limit))
}
