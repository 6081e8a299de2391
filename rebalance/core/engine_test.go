package core

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestShedSpendsTheBudgetOncePerInterval: each interval grants its budget; a connection that closes anyway
// spends none of it.
func TestShedSpendsTheBudgetOncePerInterval(t *testing.T) {
	e := NewEngine(testConfig(fixed(40, 3), 60), nil)
	if got := sheds(e, 5); got != 0 {
		t.Fatalf("before the first interval: %d of 5 shed, want 0", got)
	}
	e.Evaluate(context.Background())
	st := e.Status()
	if st.Decision != DecisionShedding || st.Budget != 2 || st.Balance != 0.5 || st.Average != 40 || st.Nodes != 3 {
		t.Fatalf("status %+v, want shedding with budget 2 at balance 0.5", st)
	}
	for range 3 {
		if e.Shed(true) {
			t.Fatal("a connection that closes anyway was shed")
		}
	}
	if got := sheds(e, 5); got != 2 {
		t.Fatalf("first interval: %d of 5 shed, want the budget of 2", got)
	}
	e.Evaluate(context.Background())
	if got := sheds(e, 5); got != 2 {
		t.Fatalf("second interval: %d of 5 shed, want 2 again", got)
	}
	if st := e.Status(); st.Shed != 4 {
		t.Fatalf("Shed = %d, want 4", st.Shed)
	}
}

func TestUnspentBudgetDoesNotAccumulate(t *testing.T) {
	e := NewEngine(testConfig(fixed(40, 3), 60), nil)
	for range 5 {
		e.Evaluate(context.Background())
	}
	if got := sheds(e, 10); got != 2 {
		t.Fatalf("after 5 idle intervals: %d shed, want one interval's budget of 2", got)
	}
}

func TestBalancedNodeSheds(t *testing.T) {
	for _, tt := range []struct {
		name     string
		src      ClusterSource
		local    int
		decision Decision
	}{
		{"balanced", fixed(55, 3), 60, DecisionBalanced},
		{"single node", fixed(60, 1), 60, DecisionSingleNode},
		{"no live node", fixed(0, 0), 60, DecisionNoAverage},
		{"below floor", fixed(4, 3), 9, DecisionBelowFloor},
		{"stale", func(context.Context) (Cluster, error) {
			return Cluster{Average: 40, Nodes: 3, At: time.Now().Add(-time.Minute)}, nil
		}, 60, DecisionStale},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(testConfig(tt.src, tt.local), nil)
			e.Evaluate(context.Background())
			if st := e.Status(); st.Decision != tt.decision || st.Budget != 0 {
				t.Fatalf("status %+v, want %s with no budget", st, tt.decision)
			}
			if got := sheds(e, 5); got != 0 {
				t.Fatalf("%d shed, want 0", got)
			}
		})
	}
}

func TestSourceErrorStopsSheddingUntilAFreshReading(t *testing.T) {
	var fail atomic.Bool
	src := func(context.Context) (Cluster, error) {
		if fail.Load() {
			return Cluster{}, errors.New("prometheus is down")
		}
		return Cluster{Average: 40, Nodes: 3}, nil
	}
	e := NewEngine(testConfig(src, 60), nil)
	e.Evaluate(context.Background())
	if st := e.Status(); st.Decision != DecisionShedding {
		t.Fatalf("state %s, want shedding", st.Decision)
	}

	fail.Store(true)
	e.Evaluate(context.Background())
	e.Evaluate(context.Background())
	st := e.Status()
	if st.Decision != DecisionSourceError || st.SourceErrors != 2 || st.LastError != "prometheus is down" || st.Budget != 0 {
		t.Fatalf("status %+v, want source_error, 2 errors, the message, no budget", st)
	}
	if got := sheds(e, 5); got != 0 {
		t.Fatalf("%d shed while the source fails, want 0", got)
	}

	fail.Store(false)
	e.Evaluate(context.Background())
	if st := e.Status(); st.Decision != DecisionShedding || st.LastError != "" || st.SourceErrors != 2 {
		t.Fatalf("status %+v after recovery, want shedding, no last error, 2 errors", st)
	}
	if got := sheds(e, 5); got != 2 {
		t.Fatalf("%d shed after recovery, want 2", got)
	}
}

func TestRiseCountsAfterTheWindow(t *testing.T) {
	var local atomic.Int64
	local.Store(40)
	cfg := testConfig(fixed(40, 3), 0)
	cfg.Connections = func() int { return int(local.Load()) }
	cfg.Window = 2 * time.Second // with a 1 s interval: the lowest of the last 3 counts
	e := NewEngine(cfg, nil)
	tick := func() Status { e.Evaluate(context.Background()); return e.Status() }

	tick()
	local.Store(60) // a stopped peer's clients arrive before the average knows the peer is gone
	for i := range 2 {
		if st := tick(); st.Decision != DecisionBalanced || st.Counted != 40 || st.Connections != 60 {
			t.Fatalf("interval %d after the rise: %+v, want balanced on a count of 40", i, st)
		}
	}
	if st := tick(); st.Decision != DecisionShedding || st.Counted != 60 {
		t.Fatalf("a rise that lasted the window: %+v, want shedding on 60", st)
	}
	local.Store(45)
	if st := tick(); st.Counted != 45 {
		t.Fatalf("a fall counts at once: counted %d, want 45", st.Counted)
	}
}

// TestNoConnectionsCountReadsZero: an engine given no count reads 0 connections, so it never sheds.
func TestNoConnectionsCountReadsZero(t *testing.T) {
	cfg := testConfig(fixed(40, 3), 0)
	cfg.Connections = nil
	cfg.MinConnections = -1
	e := NewEngine(cfg, nil)
	e.Evaluate(context.Background())
	if st := e.Status(); st.Connections != 0 || st.Decision != DecisionBalanced || st.Budget != 0 {
		t.Fatalf("status %+v, want 0 connections, balanced", st)
	}
}
