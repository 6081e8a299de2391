package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
)

// SignalNames lists the loadshed signals the scenarios can compare, by the name Signal takes: the default
// (a Controller over CPU beside scheduling latency and the run queue), "max" (the highest of CPU and scheduling
// latency read through the bands, the default before Controller), the CPU signal alone, the host-wide CPU (what
// loadshed read without a limit before), scheduling latency alone, the run queue alone and pressure stall
// information. "settled=0.97" is the default before it read the run queue.
var SignalNames = []string{"default", "max", "cpu", "host", "sched", "runq", "pressure"}

// ExperimentalSignals are signals Signal also takes that loadshed does not ship: "rundelay", the time this
// process's threads waited for a CPU (per second and per P), and "default+rundelay", the highest of CPU,
// scheduling latency (the default before Controller) and it, with load 1 at half a CPU of waiting per P. They were
// measured for a starved process (BENCHMARKS.md).
var ExperimentalSignals = []string{"rundelay", "default+rundelay"}

// FixedPrefix names a signal whose load never changes: "fixed=0.56" reads 0.56 every time. Through FixedBand's
// bands the shedder then rejects each request with that probability whatever happens: the best any shedder that
// draws one probability for every request can do once it knows the overload exactly, an oracle to compare the
// measured signals with.
const FixedPrefix = "fixed="

// FixedBand returns cfg with the bands that make a fixed=P signal's load the probability itself: ordinary
// requests over [0, 1] (Lower is the smallest positive number, since 0 means the default) and critical ones over
// [1.5, 2], which no fixed load reaches. cfg comes back unchanged for any other signal name.
func FixedBand[C, H any](name string, cfg loadshedcore.Config[C, H]) loadshedcore.Config[C, H] {
	if strings.HasPrefix(name, FixedPrefix) {
		cfg.Lower, cfg.Upper, cfg.CriticalLower, cfg.CriticalUpper = math.SmallestNonzeroFloat64, 1, 1.5, 2
	}
	return cfg
}

// SettledPrefix names a Controller over CPU and scheduling latency alone (the default before it read the run queue as
// well) at a utilisation target: "settled=0.98" holds the CPU at 0.98 of what the process may use (the default
// holds it at loadshedcore.DefaultControlTarget).
const SettledPrefix = "settled="

// TargetPrefix names loadshed's default signal at another utilisation target: "default=0.99" is what a Config
// with Target 0.99 and no Signal runs.
const TargetPrefix = "default="

// RunQueuePrefix names loadshed's default signal with another run-queue target: "runq=7" counts a queue from 7
// runnable goroutines per P instead of loadshedcore.DefaultRunQueueTarget.
const RunQueuePrefix = "runq="

// SignalChoices lists, for a flag's help, every name ParseSignals takes.
func SignalChoices() string {
	return strings.Join(append(append([]string(nil), SignalNames...), ExperimentalSignals...), ",") + "," +
		RunQueuePrefix + "N," + TargetPrefix + "T," + SettledPrefix + "T," + FixedPrefix + "P"
}

// ParseSignals parses a comma-separated list of signal names: those of SignalNames and ExperimentalSignals,
// runq=N, default=T, settled=T and fixed=P.
func ParseSignals(list string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, err := Signal(s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list of signals (from %s)", SignalChoices())
	}
	return out, nil
}

// Signal returns the loadshed signal of a name in SignalNames; "default" is nil (loadshed's own default).
func Signal(name string) (loadshedcore.Signal, error) {
	switch name {
	case "", "default":
		return nil, nil
	case "max":
		return loadshedcore.NewMax(loadshedcore.NewCPU(0), loadshedcore.NewSchedLatency(0)), nil
	case "cpu":
		return loadshedcore.NewCPU(0), nil
	case "host":
		return loadshedcore.NewHostCPU(), nil
	case "sched":
		return loadshedcore.NewSchedLatency(0), nil
	case "runq":
		return loadshedcore.NewRunQueue(0), nil
	case "pressure":
		return loadshedcore.NewPressure()
	case "rundelay":
		return &runDelay{target: 1}, nil
	case "default+rundelay":
		return loadshedcore.NewMax(loadshedcore.NewCPU(0), loadshedcore.NewSchedLatency(0), &runDelay{target: 0.5}), nil
	}
	if v, ok := strings.CutPrefix(name, RunQueuePrefix); ok {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || !(n > 0) || math.IsInf(n, 1) {
			return nil, fmt.Errorf("loadshed signal %q: the run-queue target must be a positive number", name)
		}
		return defaultController(n, 0), nil
	}
	if v, ok := strings.CutPrefix(name, TargetPrefix); ok {
		target, err := parseTarget(name, v, "target")
		if err != nil {
			return nil, err
		}
		return defaultController(0, target), nil
	}
	if v, ok := strings.CutPrefix(name, SettledPrefix); ok {
		target, err := parseTarget(name, v, "settled target")
		if err != nil {
			return nil, err
		}
		return loadshedcore.NewController(loadshedcore.NewCPU(0), loadshedcore.NewSchedLatency(0), target), nil
	}
	if v, ok := strings.CutPrefix(name, FixedPrefix); ok {
		load, err := strconv.ParseFloat(v, 64)
		if err != nil || !(load >= 0) || load > 1 {
			return nil, fmt.Errorf("loadshed signal %q: the fixed load must be a number in [0, 1]", name)
		}
		return loadshedcore.SignalFunc(func() (float64, error) { return load, nil }), nil
	}
	return nil, fmt.Errorf("unknown loadshed signal %q (one of %v)", name, SignalNames)
}

// defaultController is loadshed's default signal (loadshedcore.DefaultSignal) with its run queue's target and its
// utilisation target given, 0 for either's default.
func defaultController(runQueueTarget, target float64) *loadshedcore.Controller {
	return loadshedcore.NewController(loadshedcore.NewCPU(0),
		loadshedcore.NewMax(loadshedcore.NewSchedLatency(0), loadshedcore.NewRunQueue(runQueueTarget)), target)
}

// parseTarget parses the utilisation target v of the signal name, what it is called in the error.
func parseTarget(name, v, what string) (float64, error) {
	target, err := strconv.ParseFloat(v, 64)
	if err != nil || !(target > 0) || target > 2 {
		return 0, fmt.Errorf("loadshed signal %q: the %s must be a number in (0, 2]", name, what)
	}
	return target, nil
}
