package loadshed

import (
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core"
)

// The core's public names, re-exported so that users import only this package. Their documentation is the
// core's.

// Signal is a load measurement: 0 is idle, 1 is the capacity of the resource. See core.Signal.
type Signal = core.Signal

// SignalFunc adapts a function to a Signal.
type SignalFunc = core.SignalFunc

// CPU is a Signal of CPU utilisation: the CPU time used over the last sampling interval as a fraction of the CPU
// the process may use. See core.CPU.
type CPU = core.CPU

// SchedLatency is a Signal of how long this process's runnable goroutines wait for a CPU. See core.SchedLatency.
type SchedLatency = core.SchedLatency

// RunQueue is a Signal of how many of this process's goroutines wait for a CPU right now, per P. See
// core.RunQueue.
type RunQueue = core.RunQueue

// Pressure is a Signal from Linux pressure stall information. See core.Pressure.
type Pressure = core.Pressure

// Combined is a Signal whose load is the highest of its signals' loads. See core.Combined.
type Combined = core.Combined

// Settled is a Signal that finds the share of requests to shed from a utilisation and a latency signal, and
// moves it gradually, so that the probability settles instead of jumping. The default. See core.Settled.
type Settled = core.Settled

// Reading is one signal's last load, as reported by Status for a combined signal.
type Reading = core.Reading

// Policy maps a load to a shedding probability. See core.Policy.
type Policy = core.Policy

// Status is a point-in-time view of a Shedder, for status pages. Its JSON keys are snake_case. See core.Status.
type Status = core.Status

// The sources of a CPU signal's usage.
const (
	SourceCgroupV1 = core.SourceCgroupV1 // the limited group's cpuacct.usage
	SourceCgroupV2 = core.SourceCgroupV2 // the limited group's cpu.stat
	SourceProcess  = core.SourceProcess  // this process's own CPU time (getrusage)
	SourceHost     = core.SourceHost     // every CPU of the machine (/proc/stat)
)

// DefaultSettleTarget is the utilisation a Settled holds the process at.
const DefaultSettleTarget = core.DefaultSettleTarget

// DefaultSchedTarget is the scheduling latency NewSchedLatency(0) counts as full load.
const DefaultSchedTarget = core.DefaultSchedTarget

// DefaultRunQueueTarget is the number of runnable goroutines per P NewRunQueue(0) counts as full load.
const DefaultRunQueueTarget = core.DefaultRunQueueTarget

// NewCPU detects the CPU the process may use. cpus > 0 overrides the detected capacity (usage then still comes
// from the limited cgroup where one applies, else from this process).
func NewCPU(cpus float64) *CPU { return core.NewCPU(cpus) }

// NewHostCPU is the host-wide CPU utilisation (gopsutil over /proc/stat): every process on the machine counts, so
// busy neighbours raise it.
func NewHostCPU() *CPU { return core.NewHostCPU() }

// NewSchedLatency returns the scheduling-latency signal: load 1 when the 90th percentile of recent goroutine
// waits for a CPU reaches target. A target of 0 means DefaultSchedTarget.
func NewSchedLatency(target time.Duration) *SchedLatency { return core.NewSchedLatency(target) }

// NewRunQueue returns the run-queue signal: load 1 when target runnable goroutines per P wait for a CPU. A
// target of 0 means DefaultRunQueueTarget. It panics on a negative, infinite or NaN target.
func NewRunQueue(target float64) *RunQueue { return core.NewRunQueue(target) }

// NewPressure finds the cpu.pressure file of the process's cgroup v2 group, else /proc/pressure/cpu. It returns
// an error when neither is readable.
func NewPressure() (*Pressure, error) { return core.NewPressure() }

// Max combines signals into one whose load is their maximum. It panics when given no signal or a nil one.
func Max(signals ...Signal) *Combined { return core.Max(signals...) }

// NewSettled returns a Settled over a utilisation signal and a latency signal (nil: none), holding the
// utilisation at target (0: DefaultSettleTarget). It panics on a nil utilisation or a target out of (0, 2].
func NewSettled(utilisation, latency Signal, target float64) *Settled {
	return core.NewSettled(utilisation, latency, target)
}

// DefaultSignal is the Signal of a Config without one: a Settled over CPU utilisation (NewCPU(cpus)) beside the
// higher of scheduling latency (NewSchedLatency(0)) and the run queue (NewRunQueue(0)).
func DefaultSignal(cpus float64) *Settled { return core.DefaultSignal(cpus) }

// Probability returns the share of requests to reject at the given load: 0 at or below lower, 1 at or above
// upper, linear in between. A NaN load counts as no load.
func Probability(load, lower, upper float64) float64 { return core.Probability(load, lower, upper) }
