package upstreampick

import "github.com/fiberguard/fiberguard/upstreampick/core"

// Mode selects how an upstream is picked among the candidates.
type Mode = core.Mode

const (
	// ModeLatency picks uniformly at random among the pickable upstreams of the nearest tier that has one,
	// plus the pickable upstreams not measured yet. It is the default.
	ModeLatency Mode = core.ModeLatency
	// ModeLeastPending picks among the same candidates as ModeLatency by the power of two choices: two distinct
	// candidates at random, the one with fewer requests in flight wins.
	ModeLeastPending Mode = core.ModeLeastPending
	// ModeRandom ignores latency: uniformly at random among every pickable upstream.
	ModeRandom Mode = core.ModeRandom
)
