package core

import (
	"slices"
	"time"
)

// Tier parameters.
const (
	// tierSpread is the absolute slack of a tier: anything within best+tierSpread is as near as best, so
	// sub-millisecond differences never split a site.
	tierSpread = 2 * time.Millisecond
	// tierFactor is the relative slack: anything within tierFactor·best is as near as best.
	tierFactor = 2
	// tierStay is the hysteresis: a member of the group a tier follows leaves only above tierStay times the
	// join limit, so an upstream near the boundary does not flap between tiers.
	tierStay = 1.25
)

// noTier is the tier of an upstream that has no connect-time sample yet.
const noTier = -1

// tierMember is one upstream as the tier builder sees it.
type tierMember struct {
	// avg is the connect-time average; meaningful only when sampled.
	avg     time.Duration
	sampled bool
	// group is the group the member belonged to after the previous build; 0 is none.
	group uint64
}

// tierBuilder groups upstreams into latency tiers. Tiers are numbered from 0 (nearest) and rebuilt from scratch
// on every change; what persists between builds is the group: a set of upstreams that formed a tier together.
// A tier follows the group it takes over, so hysteresis keeps a group together while tiers appear or disappear
// above it and the tier numbers shift. The zero value is ready to use.
type tierBuilder struct {
	lastGroup uint64
}

// joinLimit is the largest average that joins the tier whose best average is best.
func joinLimit(best time.Duration) time.Duration {
	return max(best+tierSpread, tierFactor*best)
}

// stayLimit is the largest average at which a member of the followed group stays in the tier.
func stayLimit(best time.Duration) time.Duration {
	return time.Duration(tierStay * float64(joinLimit(best)))
}

// build assigns every member a tier and a group, written to tier[i] and group[i] (both len(ms) long).
// Unsampled members get noTier and group 0. Health and draining play no part: tiers describe distance only.
func (b *tierBuilder) build(ms []tierMember, tier []int, group []uint64) {
	order := make([]int, 0, len(ms))
	for i := range ms {
		tier[i], group[i] = noTier, 0
		if ms[i].sampled {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ms[a].avg < ms[b].avg:
			return -1
		case ms[a].avg > ms[b].avg:
			return 1
		}
		return 0
	})

	used := make(map[uint64]bool, 4)
	t := 0
	for k, anchor := range order {
		if tier[anchor] != noTier {
			continue
		}
		best := ms[anchor].avg
		join, stay := joinLimit(best), stayLimit(best)

		// The tier follows the anchor's previous group or, when the anchor is new to grouping or its group
		// is already taken, the previous group of the nearest joining member that has a free one.
		var follow uint64
		for _, i := range order[k:] {
			if ms[i].avg > join {
				break
			}
			if g := ms[i].group; tier[i] == noTier && g != 0 && !used[g] {
				follow = g
				break
			}
		}
		id := follow
		if id == 0 {
			b.lastGroup++
			id = b.lastGroup
		}
		used[id] = true

		for _, i := range order[k:] {
			if ms[i].avg > stay {
				break
			}
			if tier[i] != noTier {
				continue
			}
			if ms[i].avg <= join || (follow != 0 && ms[i].group == follow) {
				tier[i], group[i] = t, id
			}
		}
		t++
	}
}
