package core

import (
	"slices"
	"testing"
	"time"
)

const us = time.Microsecond

// fleet simulates upstreams whose samples arrive one at a time, rebuilding the tiers after each, as the Picker
// does.
type fleet struct {
	rtt   []ewma
	group []uint64
	tier  []int
	b     tierBuilder
}

func newFleet(n int) *fleet {
	f := &fleet{rtt: make([]ewma, n), group: make([]uint64, n), tier: make([]int, n)}
	f.rebuild()
	return f
}

func (f *fleet) rebuild() {
	ms := make([]tierMember, len(f.rtt))
	for i := range f.rtt {
		ms[i] = tierMember{avg: f.rtt[i].avg, sampled: f.rtt[i].sampled, group: f.group[i]}
	}
	f.b.build(ms, f.tier, f.group)
}

// sample feeds one sample to upstream i.
func (f *fleet) sample(i int, d time.Duration) {
	f.rtt[i].add(d)
	f.rebuild()
}

// round feeds one sample to every upstream, in index order.
func (f *fleet) round(ds ...time.Duration) {
	for i, d := range ds {
		f.sample(i, d)
	}
}

// add appends an unsampled upstream; remove drops upstream i.
func (f *fleet) add() {
	f.rtt = append(f.rtt, ewma{})
	f.group = append(f.group, 0)
	f.tier = append(f.tier, noTier)
	f.rebuild()
}

func (f *fleet) remove(i int) {
	f.rtt = slices.Delete(f.rtt, i, i+1)
	f.group = slices.Delete(f.group, i, i+1)
	f.tier = slices.Delete(f.tier, i, i+1)
	f.rebuild()
}

func TestLimits(t *testing.T) {
	tests := []struct {
		best, join, stay time.Duration
	}{
		{10 * ms, 20 * ms, 25 * ms},
		{500 * us, 2500 * us, 3125 * us},
		{0, 2 * ms, 2500 * us},
		{2 * ms, 4 * ms, 5 * ms},
		{50 * ms, 100 * ms, 125 * ms},
	}
	for _, tt := range tests {
		if got := joinLimit(tt.best); got != tt.join {
			t.Errorf("joinLimit(%v) = %v, want %v", tt.best, got, tt.join)
		}
		if got := stayLimit(tt.best); got != tt.stay {
			t.Errorf("stayLimit(%v) = %v, want %v", tt.best, got, tt.stay)
		}
	}
}

func TestTierBoundaries(t *testing.T) {
	// One build from scratch (no previous groups): the join limit decides.
	tests := []struct {
		name string
		avgs []time.Duration
		want []int
	}{
		{"best 10 ms: 20 ms joins", []time.Duration{10 * ms, 20 * ms}, []int{0, 0}},
		{"best 10 ms: 20.001 ms does not join", []time.Duration{10 * ms, 20*ms + us}, []int{0, 1}},
		{"best 10 ms: 25 ms is a new tier", []time.Duration{10 * ms, 25 * ms}, []int{0, 1}},
		{"sub-ms differences stay in one tier", []time.Duration{40 * us, 400 * us, 900 * us, 2 * ms}, []int{0, 0, 0, 0}},
		{"best 0.5 ms: 2.5 ms joins, 2.6 ms does not", []time.Duration{500 * us, 2500 * us, 2600 * us}, []int{0, 0, 1}},
		{"three sites", []time.Duration{50 * ms, 60 * us, 21 * ms, 20 * ms, 51 * ms, 80 * us},
			[]int{2, 0, 1, 1, 2, 0}},
		{"tiers chain from each tier's own best", []time.Duration{ms, 4 * ms, 7 * ms, 15 * ms}, []int{0, 1, 1, 2}},
		{"equal averages share a tier", []time.Duration{30 * ms, 30 * ms, 30 * ms}, []int{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(len(tt.avgs))
			for i, d := range tt.avgs {
				f.rtt[i].add(d)
			}
			f.rebuild()
			if !slices.Equal(f.tier, tt.want) {
				t.Fatalf("tiers %v, want %v", f.tier, tt.want)
			}
		})
	}
}

func TestTierUnsampled(t *testing.T) {
	f := newFleet(3)
	if !slices.Equal(f.tier, []int{noTier, noTier, noTier}) {
		t.Fatalf("unsampled tiers %v, want all %d", f.tier, noTier)
	}
	f.sample(1, 30*ms)
	if !slices.Equal(f.tier, []int{noTier, 0, noTier}) {
		t.Fatalf("tiers %v, want [-1 0 -1]", f.tier)
	}
	if f.group[0] != 0 || f.group[2] != 0 || f.group[1] == 0 {
		t.Fatalf("groups %v: only the sampled upstream has one", f.group)
	}
}

func TestTierHysteresis(t *testing.T) {
	// Upstream 0 is the tier's best at a steady 10 ms; upstream 1 starts in its tier at 10 ms and then sees the
	// listed samples, each followed by a steady 10 ms sample of upstream 0.
	tests := []struct {
		name    string
		samples []time.Duration
		want    []int // tier of upstream 1 after each of its samples
	}{
		{"a single outlier does not leave the tier", []time.Duration{time.Second}, []int{0}},            // capped: 19 ms
		{"three slow samples do", []time.Duration{35 * ms, 35 * ms, 35 * ms}, []int{0, 0, 1}},           // 17.5, 22.75, 26.4 ms
		{"above the join limit but within 1.25x stays", []time.Duration{30 * ms, 30 * ms}, []int{0, 0}}, // 16, 20.2 ms
		{"a member between join and stay limit stays", []time.Duration{40 * ms, 26 * ms}, []int{0, 0}},  // 19, 21.1 ms
		{"a member above the stay limit leaves", []time.Duration{40 * ms, 40 * ms}, []int{0, 1}},        // 19, 25.3 ms
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(2)
			f.round(10*ms, 10*ms)
			if !slices.Equal(f.tier, []int{0, 0}) {
				t.Fatalf("start: tiers %v, want [0 0]", f.tier)
			}
			for i, d := range tt.samples {
				f.round(10*ms, d)
				if f.tier[1] != tt.want[i] {
					t.Fatalf("after sample %d (%v): upstream 1 at %v is in tier %d, want %d",
						i, d, f.rtt[1].avg, f.tier[1], tt.want[i])
				}
			}
		})
	}
}

func TestTierNewcomerNotInGroupNeedsJoinLimit(t *testing.T) {
	// Hysteresis is for members of the group already there: an upstream first measured at 22 ms next to a
	// 10 ms best does not join, though 22 ms is within 1.25x of the join limit.
	f := newFleet(2)
	f.sample(0, 10*ms)
	f.sample(1, 22*ms)
	if !slices.Equal(f.tier, []int{0, 1}) {
		t.Fatalf("tiers %v, want [0 1]", f.tier)
	}
}

func TestTierLeftMemberRejoinsAtJoinLimit(t *testing.T) {
	f := newFleet(2)
	f.round(10*ms, 10*ms)
	f.round(10*ms, 40*ms)
	f.round(10*ms, 40*ms) // 25.3 ms: left
	if f.tier[1] != 1 {
		t.Fatalf("upstream 1 at %v in tier %d, want 1", f.rtt[1].avg, f.tier[1])
	}
	f.round(10*ms, 22*ms) // 24.3 ms: below the stay limit but no longer a member: stays out
	if f.tier[1] != 1 {
		t.Fatalf("upstream 1 at %v in tier %d, want 1 (left members rejoin at the join limit)", f.rtt[1].avg, f.tier[1])
	}
	f.round(10*ms, 15*ms) // 21.5 ms
	f.round(10*ms, 15*ms) // 19.6 ms: joins
	if f.tier[1] != 0 {
		t.Fatalf("upstream 1 at %v in tier %d, want 0", f.rtt[1].avg, f.tier[1])
	}
}

func TestTierSlowFirstSampleRecoversInOne(t *testing.T) {
	f := newFleet(2)
	f.sample(0, 10*ms)
	f.sample(1, 500*ms) // a stalled first dial
	if f.tier[1] != 1 {
		t.Fatalf("after a slow first sample: tier %d, want 1", f.tier[1])
	}
	f.sample(1, 11*ms)
	if f.tier[1] != 0 || f.rtt[1].avg != 11*ms {
		t.Fatalf("after one normal sample: tier %d avg %v, want tier 0 avg 11ms", f.tier[1], f.rtt[1].avg)
	}
}

func TestTierGroupsSurviveTiersAboveThem(t *testing.T) {
	// Upstreams 0 and 1 form a group at 10 and 24 ms (24 ms stays thanks to hysteresis: it joined at 20 ms).
	f := newFleet(2)
	f.round(10*ms, 20*ms)
	f.round(10*ms, 30*ms) // 23 ms
	f.round(10*ms, 26*ms) // 23.9 ms
	if !slices.Equal(f.tier, []int{0, 0}) {
		t.Fatalf("setup: tiers %v at %v, %v; want [0 0]", f.tier, f.rtt[0].avg, f.rtt[1].avg)
	}
	g := f.group[0]

	// A nearer site appears above them: the group becomes tier 1, and upstream 1 stays with it.
	f.add()
	f.sample(2, 100*us)
	if !slices.Equal(f.tier, []int{1, 1, 0}) || f.group[0] != g || f.group[1] != g {
		t.Fatalf("tier appeared above: tiers %v groups %v, want [1 1 0] and group %d kept", f.tier, f.group, g)
	}
	f.round(10*ms, 24*ms, 100*us)
	if !slices.Equal(f.tier, []int{1, 1, 0}) {
		t.Fatalf("next round: tiers %v, want [1 1 0]", f.tier)
	}

	// It disappears again: the group is tier 0 once more, still whole.
	f.remove(2)
	if !slices.Equal(f.tier, []int{0, 0}) || f.group[0] != g || f.group[1] != g {
		t.Fatalf("tier above removed: tiers %v groups %v, want [0 0] and group %d kept", f.tier, f.group, g)
	}

	// A site appearing slightly better than the group's best (9.9 ms: stay limit 24.75 ms) does not split the
	// group either: the tier it anchors takes the group over.
	f.add()
	f.sample(2, 9900*us)
	if !slices.Equal(f.tier, []int{0, 0, 0}) || f.group[2] != g {
		t.Fatalf("slightly better newcomer: tiers %v groups %v, want [0 0 0] in group %d", f.tier, f.group, g)
	}
}

func TestTierGroupSplitsGetDistinctIDs(t *testing.T) {
	f := newFleet(3)
	f.round(10*ms, 12*ms, 15*ms)
	if f.group[0] != f.group[1] || f.group[1] != f.group[2] {
		t.Fatalf("groups %v, want one", f.group)
	}
	f.round(10*ms, 12*ms, 100*ms) // upstream 2: 40 ms cap → 22.5 ms, stays (≤ 25)
	f.round(10*ms, 12*ms, 100*ms) // 27.75 ms: leaves
	if !slices.Equal(f.tier, []int{0, 0, 1}) || f.group[2] == f.group[0] {
		t.Fatalf("tiers %v groups %v: the leaver forms its own group", f.tier, f.group)
	}
}
