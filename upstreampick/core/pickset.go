package core

import "slices"

// Mode selects how an upstream is picked among the candidates.
type Mode int

const (
	// ModeLatency picks uniformly at random among the pickable upstreams of the nearest tier that has one,
	// plus the pickable upstreams not measured yet. It is the default.
	ModeLatency Mode = iota
	// ModeLeastPending picks among the same candidates as ModeLatency by the power of two choices: two distinct
	// candidates at random, the one with fewer requests in flight wins.
	ModeLeastPending
	// ModeRandom ignores latency: uniformly at random among every pickable upstream.
	ModeRandom
)

// String returns the mode's name as used in Config and on status pages.
func (m Mode) String() string {
	switch m {
	case ModeLatency:
		return "latency"
	case ModeLeastPending:
		return "least-pending"
	case ModeRandom:
		return "random"
	}
	return "unknown"
}

// candidate is one upstream as the picker's builder sees it.
type candidate struct {
	tier     int // noTier when not measured yet
	healthy  bool
	draining bool
}

func (c candidate) pickable() bool { return c.healthy && !c.draining }

// candidates returns the indices of the upstreams a pick chooses among, in index order: in ModeRandom every
// pickable one; otherwise the pickable ones of the lowest tier that has any, plus every pickable unmeasured
// one (an upstream joins the active tier until its first sample places it). The result is empty when nothing
// is pickable.
func candidates(cs []candidate, mode Mode) []int {
	return ladder(cs, mode)[0]
}

// ladder returns every pickable upstream by preference: level 0 is what candidates returns, each further level
// the pickable upstreams of the next tier up. A retry after a failed connection climbs it. Level 0 always
// exists (possibly empty).
func ladder(cs []candidate, mode Mode) [][]int {
	active := noTier
	if mode != ModeRandom {
		for _, c := range cs {
			if c.pickable() && c.tier != noTier && (active == noTier || c.tier < active) {
				active = c.tier
			}
		}
	}
	first := make([]int, 0, len(cs))
	for i, c := range cs {
		if c.pickable() && (mode == ModeRandom || c.tier == noTier || c.tier == active) {
			first = append(first, i)
		}
	}
	levels := [][]int{first}
	if mode == ModeRandom || active == noTier {
		return levels
	}
	for prev := active; ; {
		next := noTier
		for _, c := range cs {
			if c.pickable() && c.tier > prev && (next == noTier || c.tier < next) {
				next = c.tier
			}
		}
		if next == noTier {
			return levels
		}
		var level []int
		for i, c := range cs {
			if c.pickable() && c.tier == next {
				level = append(level, i)
			}
		}
		levels = append(levels, level)
		prev = next
	}
}

// pickSet is the immutable set a pick chooses from. Picks read it without locks; every change builds a new one.
type pickSet[T comparable] struct {
	// items are the candidates of a pick (ladder level 0).
	items []T
	mode  Mode
	// ladder holds every pickable item by preference, for retries; nil means items alone.
	ladder [][]T
}

// index maps the random number r uniformly onto [0, n) (multiply-shift on the high 32 bits; n < 2^32).
func index(r uint64, n int) int {
	return int(((r >> 32) * uint64(n)) >> 32)
}

// pick returns the chosen item and true, or false when the set is empty. r is a uniformly random number;
// pending reports an item's requests in flight and is called only in ModeLeastPending.
func (s *pickSet[T]) pick(r uint64, pending func(T) int) (T, bool) {
	n := len(s.items)
	switch n {
	case 0:
		var zero T
		return zero, false
	case 1:
		return s.items[0], true
	}
	i := index(r, n)
	if s.mode != ModeLeastPending {
		return s.items[i], true
	}
	// A second, distinct index from the low 32 bits: uniform over the other n-1 items.
	j := index(r<<32, n-1)
	if j >= i {
		j++
	}
	if pending(s.items[j]) < pending(s.items[i]) {
		return s.items[j], true
	}
	return s.items[i], true
}

// pickOther returns an item not in tried, chosen uniformly at random among those of the most preferred ladder
// level that has any, or false when every pickable item was tried. It serves retries: a request whose
// connection failed goes to another upstream of the same tier if there is one, else of the next tier.
func (s *pickSet[T]) pickOther(r uint64, tried []T) (T, bool) {
	levels := s.ladder
	if levels == nil {
		levels = [][]T{s.items}
	}
	for _, level := range levels {
		n := 0
		for _, it := range level {
			if !slices.Contains(tried, it) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		k := index(r, n)
		for _, it := range level {
			if slices.Contains(tried, it) {
				continue
			}
			if k == 0 {
				return it, true
			}
			k--
		}
	}
	var zero T
	return zero, false
}
