package main

import (
	"context"
	"sync"
	"time"
)

// doer sends one request for path and waits for its answer, for at most its own timeout.
type doer interface {
	do(path string) result
}

// driver sends every route's schedule. Each request runs in its own goroutine, so an answer's latency never
// delays the next send; at most cap(slots) run at once, and a request due while all slots are taken is not
// sent but counted as dropped.
type driver struct {
	doer    doer
	routes  []*routeStats
	slots   chan struct{}
	pending sync.WaitGroup
}

func newDriver(routes []route, inflight int, d doer) *driver {
	dr := &driver{doer: d, slots: make(chan struct{}, inflight)}
	for _, r := range routes {
		dr.routes = append(dr.routes, newRouteStats(r))
	}
	return dr
}

// run sends the schedules from start for duration, or until ctx ends, then waits for every request sent to be
// answered or to time out.
func (d *driver) run(ctx context.Context, start time.Time, duration time.Duration) {
	var schedules sync.WaitGroup
	for _, r := range d.routes {
		schedules.Go(func() { d.send(ctx, r, start, schedule{rate: r.rate, duration: duration}) })
	}
	schedules.Wait()
	d.pending.Wait()
}

// send fires r's requests at their due instants. After a late wake-up it fires every request already due at
// once: the schedule is kept, not shifted.
func (d *driver) send(ctx context.Context, r *routeStats, start time.Time, s schedule) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k, n := int64(0), s.count(); k < n; k++ {
		due := start.Add(s.at(k))
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		d.fire(r, due)
	}
}

func (d *driver) fire(r *routeStats, due time.Time) {
	select {
	case d.slots <- struct{}{}:
	default:
		r.dropped()
		return
	}
	r.sent()
	d.pending.Go(func() {
		res := d.doer.do(r.path)
		// From the due instant, not from the send: a driver that falls behind shows it instead of hiding it.
		r.record(res, time.Since(due))
		<-d.slots
	})
}

// inflight is the number of requests waiting for an answer.
func (d *driver) inflight() int { return len(d.slots) }
