package core

import (
	"strconv"

	"github.com/fiberguard/fiberguard/upstreampick/core/internal/metricsreg"
	"github.com/prometheus/client_golang/prometheus"
)

// collector exports an Engine's state. It reads the state when scraped, so the request path touches no metric,
// and a removed upstream's series disappear with it. Label values are Config.Name, configured servers and
// Discover targets, and the addresses those resolve to: never anything from a request.
type collector struct {
	p   *Engine
	reg prometheus.Registerer

	requests, rtt, tier, healthy, draining, picks *prometheus.Desc
	resolutions, discovered                       *prometheus.Desc
}

// registerCollector registers p's metrics on reg, labelled name=name. A duplicate registration (the same name
// on the same registry) is logged through warnf and skipped (nil result).
func registerCollector(p *Engine, reg prometheus.Registerer, name string, warnf func(string, ...any)) *collector {
	constant := prometheus.Labels{"name": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("fiberguard_upstreampick_"+metric, help, []string{"upstream"}, constant)
	}
	c := &collector{
		p:   p,
		reg: reg,
		requests: prometheus.NewDesc("fiberguard_upstreampick_requests_total",
			`Requests that got an upstream (decision="admitted") or found none (decision="rejected").`,
			[]string{"decision"}, constant),
		rtt: desc("rtt_seconds", "Connect-time average of the upstream (EWMA of health dials)."),
		tier: desc("tier",
			"Latency tier of the upstream, 0 being the nearest; -1 until its first connect-time sample."),
		healthy:  desc("healthy", "1 when the upstream is healthy, 0 after two consecutive connection failures."),
		draining: desc("draining", "1 while the upstream, removed from the server list, drains."),
		picks:    desc("picks_total", "Requests sent to the upstream."),
		resolutions: prometheus.NewDesc("fiberguard_upstreampick_resolutions_total",
			`Resolutions of a Discover name by result: "ok", "partial" (an SRV target failed; its addresses are kept), "empty" (no address; nothing removed) or "error" (nothing changed).`,
			[]string{"target", "result"}, constant),
		discovered: prometheus.NewDesc("fiberguard_upstreampick_discovered",
			"Upstreams a Discover name contributes: the addresses of its last answers.",
			[]string{"target"}, constant),
	}
	if !metricsreg.Register(reg, c, warnf, "upstreampick "+strconv.Quote(name),
		"set Config.Name to tell Pickers on one registry apart; this one exports none") {
		return nil
	}
	return c
}

func (c *collector) unregister() { c.reg.Unregister(c) }

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.rtt
	ch <- c.tier
	ch <- c.healthy
	ch <- c.draining
	ch <- c.picks
	ch <- c.resolutions
	ch <- c.discovered
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(c.p.admitted.Load()), "admitted")
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(c.p.rejected.Load()), "rejected")
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	for _, u := range c.p.ups {
		server := *u.name.Load()
		if u.rtt.sampled {
			ch <- prometheus.MustNewConstMetric(c.rtt, prometheus.GaugeValue, u.rtt.avg.Seconds(), server)
		}
		ch <- prometheus.MustNewConstMetric(c.tier, prometheus.GaugeValue, float64(u.tier), server)
		ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, b2f(!u.unhealthy.Load()), server)
		ch <- prometheus.MustNewConstMetric(c.draining, prometheus.GaugeValue, b2f(u.draining), server)
		ch <- prometheus.MustNewConstMetric(c.picks, prometheus.CounterValue, float64(u.picks.Load()), server)
	}
	for _, s := range c.p.sources {
		for r, n := range s.results {
			ch <- prometheus.MustNewConstMetric(c.resolutions, prometheus.CounterValue, float64(n), s.d.target, resultNames[r])
		}
		ch <- prometheus.MustNewConstMetric(c.discovered, prometheus.GaugeValue, float64(len(s.members.members)), s.d.target)
	}
}
