package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// CPU is a Signal of CPU utilisation: the CPU time used over the last sampling interval as a fraction of the CPU
// the process may use. NewCPU finds that limit from the process's cgroup (v2 cpu.max, or v1 cpu.cfs_quota_us over
// cpu.cfs_period_us, the tightest of the group and its ancestors, never more than its cpuset). Usage then comes
// from the limited group itself (v2 cpu.stat, v1 cpuacct.usage), since the quota binds every process in it.
//
// Where no limit applies (a laptop, a VM, a pod without limits.cpu), or the group's usage cannot be read (v1
// cpuacct mounted apart with the process in another cpuacct group), the usage is this process's own CPU time
// and the capacity the CPUs it may run on: its cpuset, capped by GOMAXPROCS. Busy neighbours then leave the load
// untouched. Reason says which case applies and why.
//
// A Go process runs on at most GOMAXPROCS CPUs at once, so while GOMAXPROCS is below a group's limit (GOMAXPROCS=1
// in a 2-CPU group) the load is the higher of the group's usage over its limit and this process's own CPU time
// over GOMAXPROCS: either one full is a process that cannot do more.
//
// NewHostCPU measures the whole machine instead. Load is meant for one sampler: each call measures the interval
// since the previous one.
type CPU struct {
	usage    func() (time.Duration, error) // cumulative CPU time
	capacity float64                       // CPUs the usage is divided by
	// perProcess caps the capacity by GOMAXPROCS at each reading: a Go process cannot run on more Ps.
	perProcess bool
	// own, beside a group's usage, is this process's CPU time: the load is also that over GOMAXPROCS while
	// GOMAXPROCS is below capacity.
	own func() (time.Duration, error)
	// throttle counts the periods a quota throttled the limited group (nil: unknown, or no quota).
	throttle func() (uint64, error)
	source   string
	reason   string
	now      func() time.Time
	sleep    func(time.Duration)
	// minWindow is the shortest interval measured; a sooner call repeats the last load.
	minWindow time.Duration

	mu        sync.Mutex
	primed    bool
	prevUsage time.Duration
	prevAt    time.Time
	prevOwn   time.Duration
	last      float64
	// prevThrottles is the throttle count at the last reading; throttled tells whether it grew over that
	// reading's interval.
	prevThrottles uint64
	throttled     bool
}

// The sources of a CPU signal's usage.
const (
	SourceCgroupV1 = "cgroup v1" // the limited group's cpuacct.usage
	SourceCgroupV2 = "cgroup v2" // the limited group's cpu.stat
	SourceProcess  = "process"   // this process's own CPU time (getrusage)
	SourceHost     = "host"      // every CPU of the machine (/proc/stat)
)

// hostMinWindow covers ten ticks of /proc/stat per CPU: shorter host-wide readings flap between 0 and 1.
const hostMinWindow = 100 * time.Millisecond

// primeWindow is how long the first Load measures, so the first reading exists at start.
const primeWindow = 50 * time.Millisecond

// NewCPU detects the CPU the process may use. cpus > 0 overrides the detected capacity (usage then still comes
// from the limited cgroup where one applies, else from this process).
func NewCPU(cpus float64) *CPU {
	p := detectCPU(hostFS{}, cpus, hostCPUs(), processUsage)
	return &CPU{usage: p.usage, capacity: p.capacity, perProcess: p.perProcess, own: p.ownUsage,
		throttle: p.throttled, source: p.source, reason: p.reason, now: time.Now, sleep: time.Sleep}
}

// NewHostCPU is the host-wide CPU utilisation (gopsutil over /proc/stat): every process on the machine counts, so
// busy neighbours raise it. It suits a shedder guarding a whole dedicated machine, not a service among others.
// The counters advance in 10ms ticks, so a call sooner than 100ms after the last measurement repeats it.
func NewHostCPU() *CPU {
	n := hostCPUs()
	return &CPU{usage: hostUsage, capacity: float64(n), source: SourceHost, minWindow: hostMinWindow,
		reason: fmt.Sprintf("host-wide CPU over %d CPUs", n), now: time.Now, sleep: time.Sleep}
}

// Source names where usage is read: SourceCgroupV1, SourceCgroupV2, SourceProcess or SourceHost.
func (c *CPU) Source() string { return c.source }

// Capacity is the number of CPUs the load is a fraction of: at most GOMAXPROCS, unless Config.CPUs set it.
func (c *CPU) Capacity() float64 {
	if c.perProcess || c.own != nil {
		return math.Min(c.capacity, float64(runtime.GOMAXPROCS(0)))
	}
	return c.capacity
}

// Throttled tells whether the group's quota throttled it during the interval of the last Load: its threads were
// stopped until the next period although they had work. Always false without a quota, or where the group's
// cpu.stat cannot be read.
func (c *CPU) Throttled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.throttled
}

// Reason explains the choice of source and capacity.
func (c *CPU) Reason() string { return c.reason }

// String describes the signal, for logs and Status.
func (c *CPU) String() string {
	return fmt.Sprintf("CPU of %s over %s CPUs", c.source, strconv.FormatFloat(c.Capacity(), 'g', 3, 64))
}

// Load returns the CPU used since the previous call as a fraction of Capacity. The first call measures over a
// short window of its own.
func (c *CPU) Load() (float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The clock is read before and after the counter, and an interval runs from before the previous read to after
	// this one: a sampler thread descheduled next to a read (a starved process) then makes the interval longer
	// than the true one and the load lower, never many times the capacity.
	if !c.primed {
		at := c.now()
		u, err := c.usage()
		if err != nil {
			return 0, err
		}
		if c.prevOwn, err = c.ownTime(); err != nil {
			return 0, err
		}
		c.prevUsage, c.prevAt, c.primed = u, at, true
		c.prevThrottles, _ = c.throttles()
		c.sleep(max(primeWindow, c.minWindow))
	} else if c.now().Sub(c.prevAt) < c.minWindow {
		return c.last, nil
	}
	before := c.now()
	u, err := c.usage()
	if err != nil {
		return 0, err
	}
	own, err := c.ownTime()
	if err != nil {
		return 0, err
	}
	elapsed := c.now().Sub(c.prevAt)
	capacity := c.capacity // a group's usage is over its limit, this process's over what it may run on
	if c.perProcess {
		capacity = c.Capacity()
	}
	load, err := cpuLoad(u-c.prevUsage, elapsed, capacity)
	if err != nil {
		return 0, err
	}
	if procs := float64(runtime.GOMAXPROCS(0)); c.own != nil && procs < c.capacity {
		ownLoad, err := cpuLoad(own-c.prevOwn, elapsed, procs)
		if err != nil {
			return 0, err
		}
		load = max(load, ownLoad)
	}
	c.prevUsage, c.prevOwn, c.prevAt, c.last = u, own, before, load
	// A throttle count that cannot be read says nothing: the reading counts as not throttled.
	if n, err := c.throttles(); err == nil {
		c.throttled, c.prevThrottles = n > c.prevThrottles, n
	} else {
		c.throttled = false
	}
	return load, nil
}

// throttles reads the throttle count where there is one; 0 elsewhere.
func (c *CPU) throttles() (uint64, error) {
	if c.throttle == nil {
		return 0, nil
	}
	return c.throttle()
}

// ownTime reads this process's CPU time where it is read beside a group's usage; 0 elsewhere.
func (c *CPU) ownTime() (time.Duration, error) {
	if c.own == nil {
		return 0, nil
	}
	return c.own()
}

// cpuLoad is the share of capacity CPUs that used CPU time took over elapsed wall time.
func cpuLoad(used, elapsed time.Duration, capacity float64) (float64, error) {
	switch {
	case elapsed <= 0:
		return 0, errors.New("loadshed: no time elapsed between CPU readings")
	case used < 0:
		return 0, errors.New("loadshed: CPU usage counter went backwards")
	case !(capacity > 0):
		return 0, errors.New("loadshed: no CPU capacity")
	}
	return used.Seconds() / elapsed.Seconds() / capacity, nil
}
