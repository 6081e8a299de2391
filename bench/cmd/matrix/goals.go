package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// The goals a loadshed row is held to.
const (
	overloadFrom    = 1.2   // a CPU-bound row at this factor or above is an overload
	minGoodput      = 0.85  // overload: goodput / capacity
	maxP99Ratio     = 5.0   // overload: admitted p99 / unloaded p99
	minCPU          = 0.9   // overload: CPU used / CPU it may use
	maxShedBelow    = 0.005 // a CPU-bound row below capacity
	maxFirstShed    = 100 * time.Millisecond
	maxStepP99Ratio = 10.0 // step: first-second p99 / unloaded p99
	maxShedWait     = 0.01 // the wait handler, at any load
	maxShedIdle     = 0.01 // idle beside the neighbours
)

// judged says whether goals apply to a row: loadshed's, not the anchors'.
func judged(r row) bool { return strings.HasPrefix(r.mode, "loadshed") }

// ratio is a/b, NaN when either is missing.
func ratio(a, b time.Duration) float64 {
	if a <= 0 || b <= 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func (r row) goodputFrac() float64 { return r.o.Goodput / r.capacity }
func (r row) cpuFrac() float64     { return r.cpu / r.reach() }

// reach is the CPU the app can get: what it may use, or less where the machine it shares with the load driver
// (and any neighbours) gave it less while it served flat out in the capacity run.
func (r row) reach() float64 {
	if r.capCPU > 0 {
		return min(r.allowed(), r.capCPU)
	}
	return r.allowed()
}
func (r row) p99Ratio() float64 { return ratio(r.o.P99, r.unloadedP99) }

// missedGoals lists the goals a row misses, each with the value that misses it.
func missedGoals(r row) []string {
	var m []string
	miss := func(format string, a ...any) { m = append(m, fmt.Sprintf(format, a...)) }
	shedAtMost := func(bound float64) {
		if s := r.o.ShedFrac(); s > bound {
			miss("shed %s > %s", scenario.Pct(s), scenario.Pct(bound))
		}
	}
	switch {
	case r.load == loadIdle:
		shedAtMost(maxShedIdle)
	case r.load == loadStarved: // no goal: what it does is reported
	case !r.cpuBound():
		shedAtMost(maxShedWait)
	case r.load == loadStep:
		if r.firstShed == 0 {
			miss("no 503 after the step")
		} else if r.firstShed > maxFirstShed {
			miss("first 503 %s after the step > %s", scenario.Ms(r.firstShed), scenario.Ms(maxFirstShed))
		}
		if q := ratio(r.stepP99, r.unloadedP99); !(q <= maxStepP99Ratio) {
			miss("first-second p99 %s > %g× unloaded", times(q), maxStepP99Ratio)
		}
	case r.factor >= overloadFrom:
		if g := r.goodputFrac(); !(g >= minGoodput) {
			miss("goodput %.2f < %.2f of capacity", g, minGoodput)
		}
		if r.o.Timeouts > 0 {
			miss("timeouts %s", scenario.Pct(r.o.TimeoutFrac()))
		}
		if r.onset.Timeouts > 0 {
			miss("%d timeouts in the onset", r.onset.Timeouts)
		}
		if q := r.p99Ratio(); !(q <= maxP99Ratio) {
			miss("p99 %s > %g× unloaded", times(q), maxP99Ratio)
		}
		if c := r.cpuFrac(); !(c >= minCPU) {
			miss("CPU %.2f < %.2f of what it can get", c, minCPU)
		}
	case r.factor < 1:
		shedAtMost(maxShedBelow)
	}
	return m
}

// times formats a ratio ("3.2×"), "–" when unknown.
func times(q float64) string {
	if math.IsNaN(q) {
		return "–"
	}
	return fmt.Sprintf("%.1f×", q)
}

// goalText is the goals column: empty for an unjudged row, ✓ when every goal is met.
func goalText(r row) string {
	switch {
	case !r.judged:
		return ""
	case len(r.missed) == 0:
		return "✓"
	}
	return strings.Join(r.missed, "; ")
}
