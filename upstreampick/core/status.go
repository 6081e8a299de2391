package core

import "time"

// Status is a point-in-time view of a Picker, for status pages.
type Status struct {
	// Name is Config.Name.
	Name string `json:"name"`
	// UpdatedAt is when the last health round ended; nil before the first.
	UpdatedAt *time.Time `json:"updated_at"`
	Mode      string     `json:"mode"`
	// Admitted counts the requests that got an upstream, Rejected those that found none (answered by OnReject
	// through Handler, ErrNoUpstream through LBClient) and those answered by Reject, each once, since
	// NewPicker. Pick is not counted.
	Admitted  uint64           `json:"admitted"`
	Rejected  uint64           `json:"rejected"`
	Upstreams []UpstreamStatus `json:"upstreams"`
}

// UpstreamStatus is one upstream's state.
type UpstreamStatus struct {
	Server string `json:"server"`
	// RTTSeconds is the connect-time average; 0 until Sampled.
	RTTSeconds float64 `json:"rtt_seconds"`
	Sampled    bool    `json:"sampled"`
	// Tier is the latency tier, 0 being the nearest; -1 until Sampled.
	Tier     int  `json:"tier"`
	Healthy  bool `json:"healthy"`
	Draining bool `json:"draining"`
	InFlight int  `json:"in_flight"`
	// Picks counts the requests sent to the upstream, retries and Pick included.
	Picks uint64 `json:"picks"`
	// Active reports whether new requests currently go to this upstream.
	Active bool `json:"active"`
}

// Status returns a fresh view: every upstream, configured ones in configuration order, then draining ones.
func (p *Picker) Status() Status {
	active := map[*upstream]bool{}
	for _, u := range p.set.Load().items {
		active[u] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{
		Name:      p.cfg.Name,
		Mode:      p.cfg.Mode.String(),
		Admitted:  p.bal.admitted.Load(),
		Rejected:  p.bal.rejected.Load(),
		Upstreams: make([]UpstreamStatus, 0, len(p.ups)),
	}
	if p.updated != nil {
		t := *p.updated
		st.UpdatedAt = &t
	}
	for _, u := range p.ups {
		st.Upstreams = append(st.Upstreams, UpstreamStatus{
			Server:     *u.name.Load(),
			RTTSeconds: u.rtt.avg.Seconds(),
			Sampled:    u.rtt.sampled,
			Tier:       u.tier,
			Healthy:    !u.unhealthy.Load(),
			Draining:   u.draining,
			InFlight:   u.hc.PendingRequests(),
			Picks:      u.picks.Load(),
			Active:     active[u],
		})
	}
	return st
}
