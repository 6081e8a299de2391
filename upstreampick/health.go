package upstreampick

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// run is the health goroutine: a round at once, then one every HealthInterval, until Close.
func (p *Picker) run() {
	defer close(p.done)
	tick := time.NewTicker(p.cfg.HealthInterval)
	defer tick.Stop()
	for {
		p.round()
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// round forgets drained upstreams, then dials every other upstream in parallel and waits for all dials.
func (p *Picker) round() {
	p.mu.Lock()
	p.reapLocked(time.Now())
	ups := make([]*upstream, 0, len(p.ups))
	for _, u := range p.ups {
		if !u.draining {
			ups = append(ups, u)
		}
	}
	p.mu.Unlock()

	var wg sync.WaitGroup
	for _, u := range ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rtt, err := p.probe(u)
			if p.ctx.Err() != nil {
				return // closing: a cancelled dial says nothing about the upstream
			}
			p.observe(u, rtt, err)
		}()
	}
	wg.Wait()
}

// probe resolves u's host, then times a TCP connect to its first address. Name resolution is not timed. On
// Linux the time is the handshake round trip the kernel measured, when it has one and it is below the wall
// clock's.
func (p *Picker) probe(u *upstream) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.HealthTimeout)
	addrs, err := p.cfg.LookupHost(ctx, u.host)
	cancel()
	if err != nil {
		return 0, err
	}
	if len(addrs) == 0 {
		return 0, errors.New("upstreampick: " + u.host + " resolves to no address")
	}
	addr := net.JoinHostPort(addrs[0], u.port)

	ctx, cancel = context.WithTimeout(p.ctx, p.cfg.HealthTimeout)
	defer cancel()
	var d net.Dialer
	start := time.Now()
	conn, err := d.DialContext(ctx, "tcp", addr)
	rtt := time.Since(start)
	if err != nil {
		return 0, err
	}
	if k, ok := handshakeRTT(conn); ok && k < rtt {
		rtt = k
	}
	_ = conn.Close()
	return rtt, nil
}

// observe records one health dial: a success is a connect-time sample and restores health, a failure counts
// towards unhealthy and is not a sample.
func (p *Picker) observe(u *upstream, rtt time.Duration, err error) {
	if err != nil {
		p.failure(u)
		return
	}
	u.fails.Store(0)
	u.unhealthy.Store(false)
	p.mu.Lock()
	if !u.removed {
		u.rtt.add(rtt)
		p.rebuildLocked()
	}
	p.mu.Unlock()
}

// reapLocked forgets draining upstreams that have no request in flight or whose drain timed out. p.mu must be
// held.
func (p *Picker) reapLocked(now time.Time) {
	kept := p.ups[:0]
	changed := false
	for _, u := range p.ups {
		if u.draining && (u.hc.PendingRequests() == 0 || !now.Before(u.drainUntil)) {
			u.removed = true
			u.hc.CloseIdleConnections()
			changed = true
			continue
		}
		kept = append(kept, u)
	}
	for i := len(kept); i < len(p.ups); i++ {
		p.ups[i] = nil
	}
	p.ups = kept
	if changed {
		p.rebuildLocked()
	}
}

// unhealthyAfter is the number of consecutive connection failures that make an upstream unhealthy.
const unhealthyAfter = 2

// failure records a connection failure; the second in a row makes u unhealthy.
func (p *Picker) failure(u *upstream) {
	if u.fails.Add(1) >= unhealthyAfter && u.unhealthy.CompareAndSwap(false, true) {
		p.mu.Lock()
		p.rebuildLocked()
		p.mu.Unlock()
	}
}

// success records a successful connection; it makes u healthy again.
func (p *Picker) success(u *upstream) {
	if u.fails.Load() != 0 {
		u.fails.Store(0)
	}
	if u.unhealthy.Load() && u.unhealthy.CompareAndSwap(true, false) {
		p.mu.Lock()
		p.rebuildLocked()
		p.mu.Unlock()
	}
}
