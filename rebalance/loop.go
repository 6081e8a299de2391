package rebalance

import (
	"context"
	"math"
	"time"

	"github.com/gofiber/fiber/v2/log"
)

// run is the background loop. When it ends, shedding stops and the metrics are unregistered, so that a later
// instance can register its own.
func (r *Rebalancer) run(ctx context.Context) {
	defer close(r.done)
	defer r.release()
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
		log.Infof("rebalance %q: source recovered after: %s", r.name, r.lastErr)
		r.lastErr = ""
	}
	if reading.At.IsZero() {
		reading.At = now
	}

	d := r.policy.decide(counted, reading, now, r.shedding)
	r.shedding = d.decision == DecisionShedding
	r.budget.Store(int64(d.budget))

	s := &Status{Decision: d.decision, Connections: local, Counted: counted, Nodes: reading.Nodes, Budget: d.budget, UpdatedAt: &now}
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
		log.Warnf("rebalance %q: cluster average unavailable, not shedding: %s", r.name, msg)
	}
	r.lastErr = msg
	r.status.Store(&Status{Decision: DecisionSourceError, Connections: local, Counted: counted, LastError: msg, UpdatedAt: &now})
}
