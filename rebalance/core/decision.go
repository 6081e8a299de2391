package core

import (
	"math"
	"time"
)

// Decision says what a node decided in its last interval, and why.
type Decision string

// The decisions a node reports in Status.
const (
	// DecisionStarting: no interval has completed yet.
	DecisionStarting Decision = "starting"
	// DecisionShedding: the node holds more than its share and closes some connections this interval.
	DecisionShedding Decision = "shedding"
	// DecisionBalanced: the balance is below the threshold, or a shedding node is back at its target.
	DecisionBalanced Decision = "balanced"
	// DecisionBelowFloor: the node holds Config.MinConnections or fewer: shedding would take it below the floor.
	DecisionBelowFloor Decision = "below_floor"
	// DecisionSingleNode: the cluster has one live node.
	DecisionSingleNode Decision = "single_node"
	// DecisionNoAverage: the cluster average is unknown (no live node reported) or zero.
	DecisionNoAverage Decision = "no_average"
	// DecisionStale: the reading is older than Config.MaxAge (for Prometheus: its oldest sample).
	DecisionStale Decision = "stale"
	// DecisionSourceError: the source failed; shedding waits for a fresh reading.
	DecisionSourceError Decision = "source_error"
)

// policy is the part of Config a decision depends on.
type policy struct {
	threshold float64 // balance at which shedding starts
	target    float64 // balance a shedding node sheds down to
	shedRate  float64 // share of the average shed per interval at most
	floor     int     // never shed below this many local connections; negative: no floor
	maxAge    time.Duration
}

// outcome is what one interval decided.
type outcome struct {
	balance  float64 // (local - average) / average; NaN when there is no usable average
	budget   int     // connections to shed this interval
	decision Decision
}

// decide compares local, this node's open connections, with the reading taken for the interval ending at now.
// shedding tells whether the node shed in the previous interval: once started, it goes on down to the target
// balance rather than stopping just under the threshold.
func (p policy) decide(local int, r Cluster, now time.Time, shedding bool) outcome {
	d := outcome{balance: math.NaN(), decision: DecisionBalanced}
	if r.Nodes < 1 || !(r.Average > 0) || math.IsInf(r.Average, 0) {
		d.decision = DecisionNoAverage
		if r.Nodes == 1 {
			d.decision = DecisionSingleNode
		}
		return d
	}
	d.balance = (float64(local) - r.Average) / r.Average
	switch {
	case r.Nodes == 1:
		d.decision = DecisionSingleNode
	case p.floor >= 0 && local <= p.floor:
		// Before the age: a node at its floor sheds nothing whatever the reading says.
		d.decision = DecisionBelowFloor
	case now.Sub(r.At) > p.maxAge:
		d.decision = DecisionStale
	case d.balance >= p.threshold || (shedding && d.balance > p.target):
		d.budget = p.budget(local, r.Average)
		if d.budget > 0 {
			d.decision = DecisionShedding
		}
	}
	return d
}

// budget is the number of connections a node holding local connections sheds in one interval: never more than its
// excess over the target, never more than ceil(average * shedRate), and never so many that it would hold fewer
// than the floor.
func (p policy) budget(local int, average float64) int {
	excess := math.Floor(float64(local) - average*(1+p.target))
	// The tolerance keeps a product such as 1000 * 0.005 from rounding up to 6.
	rate := math.Max(1, math.Ceil(average*p.shedRate-1e-9))
	// Never more than the node holds: also keeps the conversion to int in range whatever the rate.
	room := float64(local)
	if p.floor >= 0 {
		room = float64(local - p.floor)
	}
	return int(math.Max(0, math.Min(math.Min(excess, rate), room)))
}
