package core

import (
	"math"
	"slices"
	"testing"
)

func TestCandidates(t *testing.T) {
	h := func(tier int) candidate { return candidate{tier: tier, healthy: true} }
	sick := func(tier int) candidate { return candidate{tier: tier} }
	drain := func(tier int) candidate { return candidate{tier: tier, healthy: true, draining: true} }

	tests := []struct {
		name string
		cs   []candidate
		mode Mode
		want []int
	}{
		{"only the first tier while it is pickable", []candidate{h(1), h(0), h(2), h(0), h(1)}, ModeLatency, []int{1, 3}},
		{"least-pending chooses among the same tier", []candidate{h(1), h(0), h(2), h(0)}, ModeLeastPending, []int{1, 3}},
		{"one pickable member keeps the tier", []candidate{h(1), sick(0), h(0), drain(0)}, ModeLatency, []int{2}},
		{"fallback when the first tier is unhealthy", []candidate{h(1), sick(0), h(2), sick(0), h(1)}, ModeLatency, []int{0, 4}},
		{"fallback when the first tier drains", []candidate{h(1), drain(0), h(2)}, ModeLatency, []int{0}},
		{"fallback skips a whole unpickable tier", []candidate{sick(0), drain(1), h(2)}, ModeLatency, []int{2}},
		{"unsampled upstreams join the active tier", []candidate{h(1), h(noTier), h(0), h(noTier)}, ModeLatency, []int{1, 2, 3}},
		{"unsampled upstreams join a fallback tier", []candidate{sick(0), h(noTier), h(1)}, ModeLatency, []int{1, 2}},
		{"unpickable unsampled upstreams do not", []candidate{h(0), sick(noTier), drain(noTier)}, ModeLatency, []int{0}},
		{"only unsampled", []candidate{h(noTier), h(noTier), sick(noTier)}, ModeLatency, []int{0, 1}},
		{"nothing pickable", []candidate{sick(0), drain(1), sick(noTier)}, ModeLatency, []int{}},
		{"random ignores tiers", []candidate{h(1), h(0), h(2), h(noTier)}, ModeRandom, []int{0, 1, 2, 3}},
		{"random skips unpickable", []candidate{h(1), sick(0), drain(2), h(noTier)}, ModeRandom, []int{0, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := candidates(tt.cs, tt.mode)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("candidates %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPickNeverLowerTierWhileFirstPickable(t *testing.T) {
	// Every random number maps into the first tier: sweep the whole range.
	cs := []candidate{{tier: 1, healthy: true}, {tier: 0, healthy: true}, {tier: 2, healthy: true}, {tier: 0, healthy: true}}
	idx := candidates(cs, ModeLatency)
	for _, mode := range []Mode{ModeLatency, ModeLeastPending} {
		s := &pickSet[int]{items: idx, mode: mode}
		for k := uint64(0); k < 1<<12; k++ {
			r := k * (math.MaxUint64 / (1 << 12))
			got, ok := s.pick(r, func(int) int { return 0 })
			if !ok || cs[got].tier != 0 {
				t.Fatalf("%v: r=%#x picked %d (tier %d)", mode, r, got, cs[got].tier)
			}
		}
	}
}

func TestIndexUniform(t *testing.T) {
	// The multiply-shift maps equal slices of the high 32 bits onto each index.
	for _, n := range []int{1, 2, 3, 7, 64} {
		counts := make([]int, n)
		const steps = 1 << 16
		for k := uint64(0); k < steps; k++ {
			counts[index(k<<48, n)]++
		}
		for i, c := range counts {
			if lo, hi := steps/n, steps/n+1; c < lo || c > hi {
				t.Fatalf("n=%d: index %d got %d of %d, want %d..%d", n, i, c, steps, lo, hi)
			}
		}
		if index(math.MaxUint64, n) != n-1 || index(0, n) != 0 {
			t.Fatalf("n=%d: range ends map to %d and %d", n, index(0, n), index(math.MaxUint64, n))
		}
	}
}

func TestPickSet(t *testing.T) {
	const half = uint64(1) << 63
	tests := []struct {
		name    string
		items   []string
		mode    Mode
		r       uint64
		pending map[string]int
		want    string
		ok      bool
	}{
		{"empty", nil, ModeLatency, 0, nil, "", false},
		{"single", []string{"a"}, ModeLeastPending, half, nil, "a", true},
		{"random low", []string{"a", "b"}, ModeLatency, 0, nil, "a", true},
		{"random high", []string{"a", "b"}, ModeLatency, half, nil, "b", true},
		{"random mode", []string{"a", "b", "c"}, ModeRandom, math.MaxUint64, nil, "c", true},
		// r high half → first choice 1 ("b"); low 32 bits 0 → second choice 0 ("a").
		{"least pending keeps the first when not worse", []string{"a", "b"}, ModeLeastPending, half, map[string]int{"a": 3, "b": 3}, "b", true},
		{"least pending takes the second when it has fewer", []string{"a", "b"}, ModeLeastPending, half, map[string]int{"a": 2, "b": 3}, "a", true},
		{"least pending second choice skips the first", []string{"a", "b", "c"}, ModeLeastPending, 0 | (half >> 32), map[string]int{"a": 9, "b": 9, "c": 0}, "c", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &pickSet[string]{items: tt.items, mode: tt.mode}
			got, ok := s.pick(tt.r, func(x string) int { return tt.pending[x] })
			if got != tt.want || ok != tt.ok {
				t.Fatalf("pick = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestLeastPendingNeverPicksTheBusiest(t *testing.T) {
	// With two distinct choices the single busiest item can never win.
	items := []int{0, 1, 2}
	pending := func(i int) int { return []int{0, 0, 100}[i] }
	s := &pickSet[int]{items: items, mode: ModeLeastPending}
	for k := uint64(0); k < 1<<12; k++ {
		r := k * 0x9E3779B97F4A7C15
		if got, _ := s.pick(r, pending); got == 2 {
			t.Fatalf("r=%#x picked the busiest item", r)
		}
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{ModeLatency: "latency", ModeLeastPending: "least-pending", ModeRandom: "random", Mode(9): "unknown"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}

func TestLadder(t *testing.T) {
	h := func(tier int) candidate { return candidate{tier: tier, healthy: true} }
	sick := func(tier int) candidate { return candidate{tier: tier} }
	tests := []struct {
		name string
		cs   []candidate
		mode Mode
		want [][]int
	}{
		{"tiers in order", []candidate{h(2), h(0), h(1), h(0)}, ModeLatency, [][]int{{1, 3}, {2}, {0}}},
		{"gaps and unpickable tiers are skipped", []candidate{h(5), sick(0), h(1), sick(3)}, ModeLatency, [][]int{{2}, {0}}},
		{"unsampled only on the first level", []candidate{h(1), h(noTier), h(0)}, ModeLeastPending, [][]int{{1, 2}, {0}}},
		{"only unsampled", []candidate{h(noTier), sick(0)}, ModeLatency, [][]int{{0}}},
		{"nothing pickable", []candidate{sick(0)}, ModeLatency, [][]int{{}}},
		{"random is one level", []candidate{h(1), h(0), sick(2)}, ModeRandom, [][]int{{0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ladder(tt.cs, tt.mode)
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("ladder %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPickOther(t *testing.T) {
	set := &pickSet[string]{items: []string{"a1", "a2"}, ladder: [][]string{{"a1", "a2"}, {"b1", "b2"}, {"c"}}}
	tests := []struct {
		name  string
		r     uint64
		tried []string
		want  string
		ok    bool
	}{
		{"another of the same tier", 0, []string{"a1"}, "a2", true},
		{"another of the same tier, any r", math.MaxUint64, []string{"a2"}, "a1", true},
		{"next tier when the first is exhausted, low r", 0, []string{"a1", "a2"}, "b1", true},
		{"next tier when the first is exhausted, high r", math.MaxUint64, []string{"a2", "a1"}, "b2", true},
		{"skips tried members of the next tier", 0, []string{"a1", "a2", "b1"}, "b2", true},
		{"climbs further", 0, []string{"a1", "a2", "b1", "b2"}, "c", true},
		{"nothing left", 0, []string{"a1", "a2", "b1", "b2", "c"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := set.pickOther(tt.r, tt.tried)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("pickOther = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	// Without a ladder, the items alone.
	plain := &pickSet[string]{items: []string{"x", "y"}}
	if got, ok := plain.pickOther(0, []string{"x"}); got != "y" || !ok {
		t.Fatalf("plain pickOther = %q, %v", got, ok)
	}
	if _, ok := plain.pickOther(0, []string{"x", "y"}); ok {
		t.Fatal("plain pickOther found an untried item in a tried set")
	}
}
