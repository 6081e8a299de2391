package core

import (
	"context"
	"log"
	"math"
	"time"
)

// run is the background loop. When it ends, shedding stops and the metrics are unregistered, so that a later
// instance can register its own.
func (e *Engine) run(ctx context.Context) {
	defer e.stop()
	ticker := time.NewTicker(e.interval)
	defer ticker.Stop()
	for {
		e.Evaluate(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Evaluate runs one interval now: it reads the cluster (for at most one Interval, and no longer than ctx
// allows), decides, and grants the budget, replacing what is left of the last one. The loop calls it once per
// Interval; one interval runs at a time, so a caller that drives an engine itself can call it from anywhere.
// After Close it does nothing.
func (e *Engine) Evaluate(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return
	}
	e.tick(ctx)
}

// tick runs one interval: read the cluster, decide, and grant the budget. The caller holds e.mu.
func (e *Engine) tick(ctx context.Context) {
	local := e.connections()
	counted := e.recent.add(local)

	qctx, cancel := context.WithTimeout(ctx, e.interval)
	reading, err := e.source(qctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	if err != nil {
		e.fail(err, local, counted, now)
		return
	}
	if e.lastErr != "" {
		e.log.Infof("rebalance %q: source recovered after: %s", e.name, e.lastErr)
		e.lastErr = ""
	}
	if reading.At.IsZero() {
		reading.At = now
	}

	d := e.policy.decide(counted, reading, now, e.shedding)
	e.shedding = d.decision == DecisionShedding
	e.budget.Store(int64(d.budget))

	s := &Status{Decision: d.decision, Connections: local, Counted: counted, Nodes: reading.Nodes, Budget: d.budget, UpdatedAt: &now}
	if !math.IsNaN(d.balance) {
		s.Average, s.Balance, s.known = reading.Average, d.balance, true
	}
	e.status.Store(s)
}

// fail records a source error: shedding stops until a reading succeeds. The log gets the first error of a run
// and any different one, not one line per interval.
func (e *Engine) fail(err error, local, counted int, now time.Time) {
	e.budget.Store(0)
	e.shedding = false
	e.errs.Add(1)
	msg := err.Error()
	if msg != e.lastErr {
		e.log.Warnf("rebalance %q: cluster average unavailable, not shedding: %s", e.name, msg)
	}
	e.lastErr = msg
	e.status.Store(&Status{Decision: DecisionSourceError, Connections: local, Counted: counted, LastError: msg, UpdatedAt: &now})
}

// stdLogger is the Logger of an engine given none: the standard library's log, with the level first as Fiber's
// default logger writes it.
type stdLogger struct{}

func (stdLogger) Infof(format string, v ...any) { log.Printf("[Info] "+format, v...) }
func (stdLogger) Warnf(format string, v ...any) { log.Printf("[Warn] "+format, v...) }
