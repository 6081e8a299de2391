package core

import (
	"math"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	def := policy{threshold: 0.2, target: 0, shedRate: 0.005, floor: 50, maxAge: 3 * time.Second}
	fast := def
	fast.shedRate = 0.5
	noFloor := def
	noFloor.floor = 0
	reference := fast
	reference.target = 0.2 // stop as soon as the node is back under the threshold

	fresh := func(avg float64, nodes int) Cluster { return Cluster{Average: avg, Nodes: nodes, At: now} }
	aged := func(avg float64, nodes int, age time.Duration) Cluster {
		return Cluster{Average: avg, Nodes: nodes, At: now.Add(-age)}
	}

	tests := []struct {
		name     string
		p        policy
		local    int
		reading  Cluster
		shedding bool
		decision Decision
		budget   int
		balance  float64 // NaN: no usable average
	}{
		{"below threshold", def, 110, fresh(100, 3), false, DecisionBalanced, 0, 0.1},
		{"at threshold sheds, capped by rate", def, 120, fresh(100, 3), false, DecisionShedding, 1, 0.2},
		{"below floor", def, 45, fresh(30, 3), false, DecisionBelowFloor, 0, 0.5},
		{"at floor: would go below it", def, 50, fresh(40, 3), false, DecisionBelowFloor, 0, 0.25},
		{"one above the floor sheds one", def, 51, fresh(40, 3), false, DecisionShedding, 1, 11.0 / 40},
		{"a shedding node stops at the floor", def, 50, fresh(40, 3), true, DecisionBelowFloor, 0, 0.25},
		{"below floor, stale: the floor decides", def, 45, aged(30, 3, time.Hour), false, DecisionBelowFloor, 0, 0.5},
		{"negative floor is no floor", policy{threshold: 0.2, shedRate: 0.5, floor: -1, maxAge: time.Second}, 3, fresh(1, 3), false, DecisionShedding, 1, 2},
		{"single node", def, 200, fresh(100, 1), false, DecisionSingleNode, 0, 1},
		{"single node, no average", def, 200, Cluster{Nodes: 1, At: now}, false, DecisionSingleNode, 0, math.NaN()},
		{"no live node", def, 200, Cluster{At: now}, false, DecisionNoAverage, 0, math.NaN()},
		{"zero average", def, 200, fresh(0, 3), false, DecisionNoAverage, 0, math.NaN()},
		{"NaN average", def, 200, fresh(math.NaN(), 3), false, DecisionNoAverage, 0, math.NaN()},
		{"infinite average", def, 200, fresh(math.Inf(1), 3), false, DecisionNoAverage, 0, math.NaN()},
		{"stale average", def, 200, aged(100, 3, 4*time.Second), false, DecisionStale, 0, 1},
		{"stale average stops a shedding node", def, 200, aged(100, 3, 4*time.Second), true, DecisionStale, 0, 1},
		{"average exactly MaxAge old is fresh", def, 200, aged(100, 3, 3*time.Second), false, DecisionShedding, 1, 1},
		{"cap by rate: ceil(1000 * 0.005) = 5", def, 2000, fresh(1000, 3), false, DecisionShedding, 5, 1},
		{"cap by rate rounds up", def, 1500, fresh(1100, 3), false, DecisionShedding, 6, 4.0 / 11},
		{"cap by rate is at least one", def, 60, fresh(10, 3), false, DecisionShedding, 1, 5},
		{"cap by excess", fast, 130, fresh(100, 3), false, DecisionShedding, 30, 0.3},
		{"cap by excess rounds down", fast, 61, fresh(50.5, 3), false, DecisionShedding, 10, 10.5 / 50.5},
		{"shedding node goes on below threshold", def, 110, fresh(100, 3), true, DecisionShedding, 1, 0.1},
		{"shedding node stops at the average", def, 100, fresh(100, 3), true, DecisionBalanced, 0, 0},
		{"shedding node stops with less than one to shed", def, 101, fresh(100.5, 3), true, DecisionBalanced, 0, 0.5 / 100.5},
		{"reference: sheds down to the threshold only", reference, 130, fresh(100, 3), false, DecisionShedding, 10, 0.3},
		{"reference: stops under the threshold", reference, 110, fresh(100, 3), true, DecisionBalanced, 0, 0.1},
		{"under-loaded node", noFloor, 10, fresh(100, 3), false, DecisionBalanced, 0, -0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.p.decide(tt.local, tt.reading, now, tt.shedding)
			if d.decision != tt.decision || d.budget != tt.budget {
				t.Fatalf("decide(%d, %+v, shedding=%v) = %s budget %d, want %s budget %d",
					tt.local, tt.reading, tt.shedding, d.decision, d.budget, tt.decision, tt.budget)
			}
			if math.IsNaN(tt.balance) != math.IsNaN(d.balance) ||
				(!math.IsNaN(tt.balance) && math.Abs(d.balance-tt.balance) > 1e-12) {
				t.Fatalf("balance = %v, want %v", d.balance, tt.balance)
			}
		})
	}
}

// TestBudgetNeverBelowTheFloor: the floor bounds the budget, not only the decision to start.
func TestBudgetNeverBelowTheFloor(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(floor int, shedRate float64) policy {
		return policy{threshold: 0.2, shedRate: shedRate, floor: floor, maxAge: time.Second}
	}
	tests := []struct {
		name     string
		p        policy
		local    int
		average  float64
		decision Decision
		budget   int
	}{
		// Average 20 over 3 nodes, floor 25: 30 open can shed 5, not the excess of 10.
		{"floor above the average", at(25, 1), 30, 20, DecisionShedding, 5},
		{"local at the floor", at(25, 1), 25, 20, DecisionBelowFloor, 0},
		{"local one above the floor", at(25, 1), 26, 20, DecisionShedding, 1},
		{"floor below the average: the excess bounds", at(15, 1), 30, 20, DecisionShedding, 10},
		{"floor 0", at(0, 1), 30, 20, DecisionShedding, 10},
		{"no floor", at(-1, 1), 30, 20, DecisionShedding, 10},
		{"huge rate, floor binds", at(25, 1e12), 30, 20, DecisionShedding, 5},
		{"huge rate and average", at(-1, 1e12), 1 << 41, 1e12, DecisionShedding, 1<<41 - 1e12},
		{"infinite rate, no floor", at(-1, math.Inf(1)), 30, 20, DecisionShedding, 10},
		{"floor in a huge cluster", at(1_000_000, 1), 1_000_010, 500_000, DecisionShedding, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.p.decide(tt.local, Cluster{Average: tt.average, Nodes: 3, At: now}, now, false)
			if d.decision != tt.decision || d.budget != tt.budget {
				t.Fatalf("decide(%d) against %v = %s budget %d, want %s budget %d",
					tt.local, tt.average, d.decision, d.budget, tt.decision, tt.budget)
			}
			if tt.p.floor >= 0 && d.budget > 0 && tt.local-d.budget < tt.p.floor {
				t.Fatalf("a budget of %d takes %d connections below the floor of %d", d.budget, tt.local, tt.p.floor)
			}
		})
	}
}
