package main

import (
	"fmt"

	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"

	"github.com/fiberguard/fiberguard/rebalance"
	"github.com/gofiber/fiber/v2"
)

// rebalanceStatus is the feature's part of /status.
type rebalanceStatus struct {
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason,omitempty"`
	*rebalancecore.Status
}

// setupRebalance installs the rebalance feature: when this gateway runs as one node of a cluster behind a load
// balancer, it hands keep-alive connections back to the balancer while it holds more than its share. It needs the
// Prometheus that scrapes every node's /metrics, so it is off unless one is given:
//
//	FIBERGUARD_PROMETHEUS_URL=http://127.0.0.1:9090   enable, reading the cluster average there
//	FIBERGUARD_REBALANCE_QUERY='...'                  PromQL instead of rebalancecore.DefaultQuery
//	FIBERGUARD_REBALANCE_TIMESTAMP_QUERY='...'        the scrape times that query rests on (needed with it)
func setupRebalance(app *fiber.App, e env) (status func() any, stop func(), err error) {
	url := e.getenv("FIBERGUARD_PROMETHEUS_URL")
	if url == "" {
		off := rebalanceStatus{Reason: "set FIBERGUARD_PROMETHEUS_URL to the Prometheus that scrapes every node"}
		return func() any { return off }, nil, nil
	}
	defer func() {
		// An invalid configuration panics naming the field; the gateway reports it as a setup error.
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r := rebalance.NewRebalancer(rebalance.Config{
		// Scrapes and status checks are not client traffic worth moving.
		Next:           observing,
		App:            app,
		PrometheusURL:  url,
		Query:          e.getenv("FIBERGUARD_REBALANCE_QUERY"),
		TimestampQuery: e.getenv("FIBERGUARD_REBALANCE_TIMESTAMP_QUERY"),
		Registerer:     e.registry,
	})
	app.Use(r.Handler())
	status = func() any {
		s := r.Status()
		return rebalanceStatus{Enabled: true, Status: &s}
	}
	return status, func() { _ = r.Close() }, nil
}
