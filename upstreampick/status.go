package upstreampick

import "time"

// Status is a snapshot of a Picker's state, for status pages.
type Status struct {
	Mode      string           `json:"mode"`
	Upstreams []UpstreamStatus `json:"upstreams"`
}

// UpstreamStatus is one upstream's state.
type UpstreamStatus struct {
	Server string `json:"server"`
	// RTT is the connect-time average; 0 until Sampled.
	RTT       time.Duration `json:"-"`
	RTTMillis float64       `json:"rtt_ms"`
	Sampled   bool          `json:"sampled"`
	// Tier is the latency tier, 0 being the nearest; -1 until Sampled.
	Tier     int    `json:"tier"`
	Healthy  bool   `json:"healthy"`
	Draining bool   `json:"draining"`
	InFlight int    `json:"in_flight"`
	Picks    uint64 `json:"picks"`
	// Active reports whether new requests currently go to this upstream.
	Active bool `json:"active"`
}

// Status returns a snapshot of every upstream, configured ones in configuration order, then draining ones.
func (p *Picker) Status() Status {
	active := map[*upstream]bool{}
	for _, u := range p.set.Load().items {
		active[u] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Mode: p.cfg.Mode.String(), Upstreams: make([]UpstreamStatus, 0, len(p.ups))}
	for _, u := range p.ups {
		st.Upstreams = append(st.Upstreams, UpstreamStatus{
			Server:    *u.name.Load(),
			RTT:       u.rtt.avg,
			RTTMillis: float64(u.rtt.avg) / float64(time.Millisecond),
			Sampled:   u.rtt.sampled,
			Tier:      u.tier,
			Healthy:   !u.unhealthy.Load(),
			Draining:  u.draining,
			InFlight:  u.hc.PendingRequests(),
			Picks:     u.picks.Load(),
			Active:    active[u],
		})
	}
	return st
}
