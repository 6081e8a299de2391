package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// overloadRow is a loadshed row of a 1-CPU cpu cell at 2× capacity that meets every goal just: goodput 0.85 of
// capacity, no timeout, p99 5× the unloaded one, 0.9 of the CPU used.
func overloadRow() row {
	return row{cell: cell{quota: quota{"1", 1}, procs: "default", handler: "cpu"}, load: "2", factor: 2,
		mode: "loadshed", capacity: 1000, unloadedP99: 10 * time.Millisecond, cpu: 0.9,
		o: scenario.Outcome{Offered: 2000, Goodput: 850, Total: 20000, OK: 8500, Shed: 11500, P99: 50 * time.Millisecond}}
}

func TestMissedGoals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*row)
		want string // "" when every goal is met; else a part of the one miss
	}{
		{"overload at every bound", func(*row) {}, ""},
		{"goodput just below", func(r *row) { r.o.Goodput = 849.9 }, "goodput 0.85 < 0.85"},
		{"one timeout", func(r *row) { r.o.Timeouts = 1 }, "timeouts"},
		{"p99 just above 5×", func(r *row) { r.o.P99 = 50*time.Millisecond + time.Microsecond }, "p99 5.0× > 5× unloaded"},
		{"no 200 at all", func(r *row) { r.o.P99, r.o.Goodput = 0, 850 }, "p99 – > 5×"},
		{"CPU just below", func(r *row) { r.cpu = 0.899 }, "CPU 0.90 < 0.90"},
		{"CPU of a 0.5-CPU quota", func(r *row) { r.quota, r.cpu = quota{"0.5", 0.5}, 0.45 }, ""},
		{"CPU of no limit (host CPUs)", func(r *row) { r.quota, r.cpu = quota{"none", 0}, 0.9*r.allowed()-0.001 }, "CPU"},
		{"CPU of GOMAXPROCS 1 with no limit", func(r *row) { r.quota, r.procs, r.cpu = quota{"none", 0}, "1", 0.9 }, ""},
		{"CPU short of GOMAXPROCS 1", func(r *row) { r.quota, r.procs, r.cpu = quota{"none", 0}, "1", 0.89 }, "CPU 0.89 < 0.90"},
		{"CPU of what the capacity run got", func(r *row) { r.quota, r.capCPU, r.cpu = quota{"none", 0}, 1.4, 1.26 }, ""},
		{"CPU short of what the capacity run got", func(r *row) { r.quota, r.capCPU, r.cpu = quota{"none", 0}, 1.4, 1.25 }, "can get"},
		{"1.2× is an overload", func(r *row) { r.factor, r.load, r.o.Goodput = 1.2, "1.2", 800 }, "goodput"},
		{"1.1× has no goal", func(r *row) { r.factor, r.load, r.o.Goodput, r.cpu = 1.1, "1.1", 100, 0.1 }, ""},
		{"0.8× shedding 0.5 %", func(r *row) { r.factor, r.load, r.o.Total, r.o.Shed = 0.8, "0.8", 1000, 5 }, ""},
		{"0.8× shedding 0.6 %", func(r *row) { r.factor, r.load, r.o.Total, r.o.Shed = 0.8, "0.8", 1000, 6 }, "shed 0.6 % > 0.5 %"},
		{"wait shedding 1 %", func(r *row) { r.handler, r.o.Total, r.o.Shed, r.o.Goodput, r.cpu = "wait", 1000, 10, 0, 0 }, ""},
		{"wait shedding 1.1 %", func(r *row) { r.handler, r.o.Total, r.o.Shed = "wait", 1000, 11 }, "shed 1.1 % > 1.0 %"},
		{"idle shedding 1 %", func(r *row) { r.neighbours, r.load, r.o.Total, r.o.Shed, r.cpu = true, loadIdle, 1000, 10, 0 }, ""},
		{"idle shedding 1.1 %", func(r *row) { r.neighbours, r.load, r.o.Total, r.o.Shed = true, loadIdle, 1000, 11 }, "shed 1.1 %"},
		{"starved has no goal", func(r *row) { r.neighbours, r.load, r.o.Timeouts, r.cpu = true, loadStarved, 100, 0 }, ""},
		{"step at both bounds", func(r *row) { step(r, 100*time.Millisecond, 100*time.Millisecond) }, ""},
		{"step's first 503 just late", func(r *row) { step(r, 100*time.Millisecond+time.Microsecond, 100*time.Millisecond) }, "first 503 100 ms after the step > 100 ms"},
		{"step without a 503", func(r *row) { step(r, 0, 10*time.Millisecond) }, "no 503 after the step"},
		{"step's p99 just above 10×", func(r *row) { step(r, time.Millisecond, 100*time.Millisecond+time.Microsecond) }, "first-second p99 10.0× > 10×"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := overloadRow()
			tc.edit(&r)
			got := missedGoals(r)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("missed %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("missed %q, want one miss containing %q", got, tc.want)
			}
		})
	}
}

// step makes r a step row with a first 503 and a first-second p99; the other goals of an overload no longer apply.
func step(r *row, firstShed, p99 time.Duration) {
	r.load, r.factor, r.firstShed, r.stepP99 = loadStep, stepHigh, firstShed, p99
	r.o.Timeouts, r.cpu, r.o.Goodput = 10, 0.1, 10
}

func TestGoalText(t *testing.T) {
	r := overloadRow()
	if goalText(r) != "" {
		t.Error("an unjudged row has goals")
	}
	r.judged = true
	if goalText(r) != "✓" {
		t.Error("no miss is not ✓")
	}
	r.missed = []string{"a", "b"}
	if goalText(r) != "a; b" {
		t.Errorf("%q", goalText(r))
	}
	if !judged(row{mode: "loadshed-cpu"}) || !judged(row{mode: "loadshed"}) || judged(row{mode: "failsafe"}) {
		t.Error("judged: loadshed's rows only")
	}
}
