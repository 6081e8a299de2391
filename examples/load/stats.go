package main

import (
	"sync"
	"time"
)

// The server chooses module names, statuses and error texts; these caps keep a route's memory bounded whatever
// it sends. What does not fit is counted under otherKey / otherStatus.
const (
	maxModules   = 8
	maxStatuses  = 16
	maxErrors    = 8
	otherKey     = "(other)"
	otherStatus  = 0
	maxErrorText = 120
)

// counts is what a route got over some span of time.
type counts struct {
	sent, dropped int64
	ok            int64
	rejected      map[string]int64 // by module
	unavailable   int64            // 503 without Fiberguard-Rejected-By
	statuses      map[int]int64    // other statuses
	timeouts      int64
	errors        int64
	errTexts      map[string]int64
	all, okOnly   histogram // latency of every answer, and of the 200s
}

func newCounts() *counts {
	return &counts{rejected: map[string]int64{}, statuses: map[int]int64{}, errTexts: map[string]int64{}}
}

// answered is the number of requests that got an answer or failed.
func (c *counts) answered() int64 {
	return c.ok + sum(c.rejected) + c.unavailable + sum(c.statuses) + c.timeouts + c.errors
}

func (c *counts) add(o outcome, latency time.Duration) {
	switch o.kind {
	case kindOK:
		c.ok++
		c.okOnly.record(latency)
	case kindRejected:
		bump(c.rejected, o.module, otherKey, maxModules)
	case kindUnavailable:
		c.unavailable++
	case kindOtherStatus:
		bump(c.statuses, o.status, otherStatus, maxStatuses)
	case kindTimeout:
		c.timeouts++
		return // no answer: no latency
	case kindError:
		c.errors++
		text := o.err
		if len(text) > maxErrorText {
			text = text[:maxErrorText]
		}
		bump(c.errTexts, text, otherKey, maxErrors)
		return
	}
	c.all.record(latency)
}

// bump counts one for k in m, or for other once m holds limit keys.
func bump[K comparable](m map[K]int64, k, other K, limit int) {
	if _, ok := m[k]; !ok && len(m) >= limit {
		k = other
	}
	m[k]++
}

func sum[K comparable](m map[K]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// routeStats counts one route's requests for the current interval and for the whole run.
type routeStats struct {
	route
	mu       sync.Mutex
	interval *counts
	total    *counts
	inflight int64 // sent and not yet answered
}

func newRouteStats(r route) *routeStats {
	return &routeStats{route: r, interval: newCounts(), total: newCounts()}
}

func (s *routeStats) sent() {
	s.mu.Lock()
	s.interval.sent++
	s.total.sent++
	s.inflight++
	s.mu.Unlock()
}

func (s *routeStats) dropped() {
	s.mu.Lock()
	s.interval.dropped++
	s.total.dropped++
	s.mu.Unlock()
}

func (s *routeStats) record(r result, latency time.Duration) {
	o := classify(r)
	s.mu.Lock()
	s.interval.add(o, latency)
	s.total.add(o, latency)
	s.inflight--
	s.mu.Unlock()
}

// takeInterval returns the counts since the last call and starts a new interval; inflight is the number of
// this route's requests waiting for an answer now.
func (s *routeStats) takeInterval() (c *counts, inflight int64) {
	fresh := newCounts()
	s.mu.Lock()
	c, s.interval = s.interval, fresh
	inflight = s.inflight
	s.mu.Unlock()
	return c, inflight
}

// quiet reports whether nothing was sent, answered or dropped since the last takeInterval.
func (s *routeStats) quiet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interval.sent == 0 && s.interval.dropped == 0 && s.interval.answered() == 0
}

// totals returns the whole run's counts. Call it once the requests are answered: the counts are not copied.
func (s *routeStats) totals() *counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}
