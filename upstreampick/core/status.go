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
	// Discovery holds one entry per name of Config.Discover, in its order; empty without discovery.
	Discovery []DiscoveryStatus `json:"discovery"`
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
	// Discovered is the Config.Discover target that lists the upstream (DiscoveryStatus.Target); "" for a
	// server of Config.Servers or SetServers.
	Discovered string `json:"discovered"`
}

// DiscoveryStatus is the state of one name of Config.Discover.
type DiscoveryStatus struct {
	// Target is the name as given: DNS's server or DNSSRV's name (the target label of the metrics).
	Target string `json:"target"`
	// Type is "dns" (A and AAAA records) or "dns-srv".
	Type            string  `json:"type"`
	IntervalSeconds float64 `json:"interval_seconds"`
	// ResolvedAt is when an answer last found addresses; nil before the first.
	ResolvedAt *time.Time `json:"resolved_at"`
	// Addresses are the upstreams the name contributes ("scheme://address:port"), by address. They are the last
	// addresses found: an answer that finds none, or a failure, changes nothing.
	Addresses []string `json:"addresses"`
	// Missing are the Addresses absent from the latest answers: one leaves (and drains) once absent from three
	// answers in a row.
	Missing []string `json:"missing"`
	// LastError says why the last resolution that was not a full success failed, found no address, or failed
	// in part; LastErrorAt is when. "" and nil before the first.
	LastError   string     `json:"last_error"`
	LastErrorAt *time.Time `json:"last_error_at"`
	// Resolutions counts the resolutions since NewPicker, Errors those that set LastError.
	Resolutions uint64 `json:"resolutions"`
	Errors      uint64 `json:"errors"`
}

// Status is Picker.Status.
func (p *Engine) Status() Status {
	active := map[*Upstream]bool{}
	for _, u := range p.set.Load().items {
		active[u] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{
		Name:      p.cfg.name,
		Mode:      p.cfg.mode.String(),
		Admitted:  p.admitted.Load(),
		Rejected:  p.rejected.Load(),
		Upstreams: make([]UpstreamStatus, 0, len(p.ups)),
		Discovery: p.discoveryStatusLocked(),
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
			InFlight:   int(u.inflight.Load()),
			Picks:      u.picks.Load(),
			Active:     active[u],
			Discovered: u.source,
		})
	}
	return st
}
