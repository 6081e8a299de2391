package core

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// An upstream's health is kept here, whoever saw the connection: a health dial, a request's dial or a
// request's response. failed and connected are the only two ways it changes.

// unhealthyAfter is the number of consecutive connection failures that make an upstream unhealthy.
const unhealthyAfter = 2

// failed records a connection failure; the second in a row makes u unhealthy.
func (p *Engine) failed(u *Upstream) {
	if u.fails.Add(1) >= unhealthyAfter && u.unhealthy.CompareAndSwap(false, true) {
		p.mu.Lock()
		p.rebuildLocked()
		p.mu.Unlock()
	}
}

// connected records a connection to u that worked, and is the one way back to healthy: it clears the failure
// count and, when u was unhealthy, makes it pickable again. With sampled (a health dial), rtt is a connect-time
// sample for u's average; requests pass none, so samples come at the health checks' steady rate. A request
// takes no lock unless u recovers.
func (p *Engine) connected(u *Upstream, rtt time.Duration, sampled bool) {
	if u.fails.Load() != 0 {
		u.fails.Store(0)
	}
	recovered := u.unhealthy.Load() && u.unhealthy.CompareAndSwap(true, false)
	if !recovered && !sampled {
		return
	}
	p.mu.Lock()
	if sampled && !u.removed {
		u.rtt.add(rtt)
	}
	p.rebuildLocked()
	p.mu.Unlock()
}

// run is the health goroutine: a round at once, then one every HealthInterval, until Close or Config.Context
// is done. In the latter case it finishes with Close's other work itself, as nobody may call Close.
func (p *Engine) run() {
	defer func() {
		close(p.done)
		if p.cfg.context != nil && p.cfg.context.Err() != nil {
			_ = p.Close()
		}
	}()
	tick := time.NewTicker(p.cfg.healthInterval)
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
func (p *Engine) round() {
	p.mu.Lock()
	p.reapLocked(time.Now())
	ups := make([]*Upstream, 0, len(p.ups))
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
			switch {
			case p.ctx.Err() != nil:
				// Closing: a cancelled dial says nothing about the upstream.
			case err != nil:
				p.failed(u)
			default:
				p.connected(u, rtt, true)
			}
		}()
	}
	wg.Wait()
	if p.ctx.Err() == nil {
		now := time.Now()
		p.mu.Lock()
		p.updated = &now
		p.mu.Unlock()
	}
}

// probe resolves u's host (unless it is an IP address), then times a dial to its first address. Name
// resolution is not timed. With the default dialer on Linux the time is the handshake round trip the kernel
// measured, when it has one and it is below the wall clock's.
func (p *Engine) probe(u *Upstream) (time.Duration, error) {
	addr := net.JoinHostPort(u.host, u.port)
	if !u.literal {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.healthTimeout)
		addrs, err := p.lookup(ctx, u.host)
		cancel()
		if err != nil {
			return 0, err
		}
		if len(addrs) == 0 {
			return 0, errors.New("upstreampick: " + u.host + " resolves to no address")
		}
		addr = net.JoinHostPort(addrs[0], u.port)
	}

	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.healthTimeout)
	defer cancel()
	start := time.Now()
	conn, err := p.dial(ctx, addr)
	rtt := time.Since(start)
	if err != nil {
		return 0, err
	}
	if k, ok := handshakeRTT(conn); ok && p.kernelRTT && k < rtt {
		rtt = k
	}
	_ = conn.Close()
	return rtt, nil
}
