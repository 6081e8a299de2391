package core

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// onDemandGap is the shortest time between two resolutions of a name that nothing pickable asked for: when
// every upstream is down, a name is re-resolved at once, then at most once per onDemandGap besides its interval.
const onDemandGap = time.Second

// source is one name of Config.Discover and what it resolved to.
type source struct {
	d Discovery
	// timeout bounds one resolution: half the interval.
	timeout time.Duration
	// wake asks for a resolution now (nothing is pickable); buffered, so asking never blocks.
	wake chan struct{}
	// hosts is lookup's memory of SRV target hosts; only the source's resolutions use it, one at a time.
	hosts map[string][]string

	// Guarded by Engine.mu.
	members    membership
	resolvedAt *time.Time // last answer that found addresses
	lastErr    string
	lastErrAt  *time.Time
	// logged is the key of the failure last logged; "" once the name resolves again.
	logged  string
	results [resultCount]uint64
}

func newSources(ds []Discovery) []*source {
	out := make([]*source, len(ds))
	for i, d := range ds {
		out[i] = &source{d: d, timeout: d.interval / 2, wake: make(chan struct{}, 1)}
	}
	return out
}

// resolveFirst resolves every name at once and waits for all, each bounded by its timeout: NewEngine's first
// answers. It publishes nothing; NewEngine's first setTargets does.
func (p *Engine) resolveFirst() {
	var wg sync.WaitGroup
	for _, s := range p.sources {
		wg.Go(func() { p.resolve(s, false) })
	}
	wg.Wait()
}

// discover is a name's goroutine: it resolves the name every interval, and on demand when nothing is pickable
// (at most once per onDemandGap), until Close or Config.Context is done. NewEngine resolved it once already.
func (p *Engine) discover(s *source) {
	defer p.discovering.Done()
	tick := time.NewTicker(s.d.interval)
	defer tick.Stop()
	last := time.Now()
	var soon *time.Timer
	var soonC <-chan time.Time
	defer func() {
		if soon != nil {
			soon.Stop()
		}
	}()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		case <-soonC:
		case <-s.wake:
			if wait := onDemandGap - time.Since(last); wait > 0 {
				if soonC == nil {
					soon = time.NewTimer(wait)
					soonC = soon.C
				}
				continue
			}
		}
		if soon != nil {
			soon.Stop()
			soon, soonC = nil, nil
		}
		last = time.Now()
		p.resolve(s, true)
		tick.Reset(s.d.interval)
	}
}

// resolve resolves s once and records the answer; with publish, a change of its addresses goes to the pick
// set at once.
func (p *Engine) resolve(s *source, publish bool) {
	ctx, cancel := context.WithTimeout(p.ctx, s.timeout)
	a := s.d.lookup(ctx, p.resolver, s.hosts)
	cancel()
	if p.ctx.Err() != nil {
		return // closing: a cancelled lookup says nothing about the name
	}
	if a.hosts != nil {
		s.hosts = a.hosts
	}
	now := time.Now()
	p.mu.Lock()
	changed, logLine := p.recordLocked(s, a, now)
	if changed && publish {
		p.setTargetsLocked(p.targetsLocked())
	}
	p.mu.Unlock()
	if logLine != "" {
		p.warnf("%s", logLine)
	}
}

// recordLocked folds answer a into s: it reports whether s's addresses changed, and returns the line to log
// ("" for none): the first of each distinct failure in a row, and the name resolving again after one. p.mu
// must be held.
func (p *Engine) recordLocked(s *source, a answer, now time.Time) (changed bool, logLine string) {
	res := a.result()
	s.results[res]++
	if res == resultOK || res == resultPartial {
		s.resolvedAt = &now
		changed = s.members.apply(a.targets, a.keep)
	}
	who := "upstreampick " + strconv.Quote(p.cfg.name) + ": " + s.d.String()
	if res == resultOK {
		if s.logged != "" {
			s.logged = ""
			logLine = who + " resolves again, to " + addresses(len(s.members.members))
		}
		return changed, logLine
	}

	why := "no address"
	if a.err != nil {
		why = a.err.Error()
	}
	s.lastErr, s.lastErrAt = why, &now
	if key := resultNames[res] + " " + errorKey(a.err); key != s.logged {
		s.logged = key
		switch res {
		case resultPartial:
			logLine = who + ": " + why + "; keeping the addresses of what failed, " + addresses(len(s.members.members)) + " in all"
		case resultEmpty:
			logLine = who + ": " + why + "; an empty answer removes nothing, keeping " + addresses(len(s.members.members))
		default:
			logLine = who + ": " + why + "; keeping " + addresses(len(s.members.members))
		}
	}
	return changed, logLine
}

func addresses(n int) string {
	if n == 1 {
		return "1 address"
	}
	return strconv.Itoa(n) + " addresses"
}

// targetsLocked is the upstream list: the static servers (Config.Servers, then SetServers) in their order, then
// each name's addresses in Config.Discover order, by address; an upstream listed twice is kept where it comes
// first. p.mu must be held.
func (p *Engine) targetsLocked() []target {
	out := make([]target, 0, len(p.static))
	seen := make(map[string]bool, len(p.static))
	for _, t := range p.static {
		seen[t.key] = true
		out = append(out, t)
	}
	for _, s := range p.sources {
		for _, mb := range s.members.sorted() {
			if !seen[mb.t.key] {
				seen[mb.t.key] = true
				out = append(out, mb.t)
			}
		}
	}
	return out
}

// wakeDiscovery asks every name for a resolution now, without blocking: nothing is pickable.
func (p *Engine) wakeDiscovery() {
	for _, s := range p.sources {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// discoveryStatusLocked is the view of every name. p.mu must be held.
func (p *Engine) discoveryStatusLocked() []DiscoveryStatus {
	out := make([]DiscoveryStatus, 0, len(p.sources))
	for _, s := range p.sources {
		ds := DiscoveryStatus{
			Target:          s.d.target,
			Type:            s.d.kind(),
			IntervalSeconds: s.d.interval.Seconds(),
			ResolvedAt:      copyTime(s.resolvedAt),
			Addresses:       make([]string, 0, len(s.members.members)),
			Missing:         []string{},
			LastError:       s.lastErr,
			LastErrorAt:     copyTime(s.lastErrAt),
		}
		for _, mb := range s.members.sorted() {
			ds.Addresses = append(ds.Addresses, mb.t.server)
			if mb.misses > 0 {
				ds.Missing = append(ds.Missing, mb.t.server)
			}
		}
		for r, n := range s.results {
			ds.Resolutions += n
			if result(r) != resultOK {
				ds.Errors += n
			}
		}
		out = append(out, ds)
	}
	return out
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
