package loadshed

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v3/cpu"
)

// CPU is the default Signal: the CPU time used over the last sampling interval as a fraction of the CPU the process
// may use. NewCPU finds that limit from the process's cgroup (v2 cpu.max, or v1 cpu.cfs_quota_us over
// cpu.cfs_period_us, never more than its cpuset); usage then comes from the same group (v2 cpu.stat, v1
// cpuacct.usage). Where no limit applies, or the cgroup files are missing or odd, it falls back to the host-wide
// CPU usage read by gopsutil, and Reason says why.
//
// Load is meant for one sampler: each call measures the interval since the previous one. Host-wide counters
// advance in 10ms ticks, so on the host fallback a call sooner than 100ms after the last measurement repeats it.
type CPU struct {
	usage    func() (time.Duration, error) // cumulative CPU time
	capacity float64                       // CPUs the usage is divided by
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
	last      float64
}

// hostMinWindow covers ten ticks of /proc/stat per CPU: shorter host-wide readings flap between 0 and 1.
const hostMinWindow = 100 * time.Millisecond

// primeWindow is how long the first Load measures, so the first reading exists at start.
const primeWindow = 50 * time.Millisecond

// NewCPU detects the CPU the process may use. cpus > 0 overrides the detected capacity (usage then still comes
// from the process's cgroup where one is readable, else from the host).
func NewCPU(cpus float64) *CPU {
	p := detectCPU(hostFS{}, cpus, hostCPUs(), hostUsage)
	c := &CPU{usage: p.usage, capacity: p.capacity, source: p.source, reason: p.reason, now: time.Now, sleep: time.Sleep}
	if p.source == "host" {
		c.minWindow = hostMinWindow
	}
	return c
}

// Source names where usage is read: "cgroup v1", "cgroup v2" or "host".
func (c *CPU) Source() string { return c.source }

// Capacity is the number of CPUs the load is a fraction of.
func (c *CPU) Capacity() float64 { return c.capacity }

// Reason explains the choice of source and capacity (why the host-wide fallback is used, for instance).
func (c *CPU) Reason() string { return c.reason }

// Load returns the CPU used since the previous call as a fraction of Capacity. The first call measures over a
// short window of its own.
func (c *CPU) Load() (float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.primed {
		u, err := c.usage()
		if err != nil {
			return 0, err
		}
		c.prevUsage, c.prevAt, c.primed = u, c.now(), true
		c.sleep(max(primeWindow, c.minWindow))
	} else if c.now().Sub(c.prevAt) < c.minWindow {
		return c.last, nil
	}
	u, err := c.usage()
	if err != nil {
		return 0, err
	}
	at := c.now()
	load, err := cpuLoad(u-c.prevUsage, at.Sub(c.prevAt), c.capacity)
	if err != nil {
		return 0, err
	}
	c.prevUsage, c.prevAt, c.last = u, at, load
	return load, nil
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

// cpuPlan is what detectCPU chose.
type cpuPlan struct {
	usage    func() (time.Duration, error)
	capacity float64
	source   string
	reason   string
}

// detectCPU chooses the usage counter and the capacity. fs holds /proc and /sys (a fixture tree in tests),
// hostN is the host's CPU count and host reads host-wide busy time.
func detectCPU(fs hostFS, override float64, hostN int, host func() (time.Duration, error)) cpuPlan {
	fallback := func(reason string) cpuPlan {
		capacity := float64(hostN)
		if override > 0 {
			capacity = override
		}
		return cpuPlan{usage: host, capacity: capacity, source: "host", reason: reason}
	}

	cg, err := fs.read("/proc/self/cgroup")
	if err != nil {
		return fallback("no cgroup information: " + err.Error())
	}
	mi, err := fs.read("/proc/self/mountinfo")
	if err != nil {
		return fallback("no mount information: " + err.Error())
	}
	pc, mounts := parseProcCgroup(cg), parseMountinfo(mi)

	limit := math.Inf(1)
	var notes []string
	if n, ok := cpusetCount(fs, mounts, pc); ok && n < hostN {
		limit = float64(n)
		notes = append(notes, fmt.Sprintf("cpuset allows %d CPUs", n))
	}

	// The group's CPU controller: where its limit and its usage are read.
	var g struct {
		source, limitName string // "cgroup v1", "quota"
		dir, top          string // the group and the mount point above it
		readLimit         func(dir string) (float64, error)
		usageFile         string
		parseUsage        func([]byte) (time.Duration, error)
	}
	if dir, top := v1Dir(mounts, pc, "cpu"); dir != "" {
		acct, _ := v1Dir(mounts, pc, "cpuacct")
		if acct == "" {
			return fallback("cgroup v1 cpuacct controller not mounted")
		}
		g.source, g.limitName, g.dir, g.top = "cgroup v1", "quota", dir, top
		g.readLimit = func(d string) (float64, error) { return readCFSQuota(fs, d) }
		g.usageFile, g.parseUsage = acct+"/cpuacct.usage", parseCpuacctUsage
	} else if dir, top := v2Dir(mounts, pc); dir != "" {
		g.source, g.limitName, g.dir, g.top = "cgroup v2", "cpu.max", dir, top
		g.readLimit = func(d string) (float64, error) {
			data, err := fs.read(d + "/cpu.max")
			if err != nil {
				return 0, err
			}
			return parseCPUMax(data)
		}
		g.usageFile, g.parseUsage = dir+"/cpu.stat", parseCPUStatUsage
	} else {
		return fallback("no cgroup CPU controller found")
	}

	q, where, err := groupLimit(g.dir, g.top, g.readLimit)
	switch {
	case err == nil:
		limit = math.Min(limit, q)
		notes = append(notes, fmt.Sprintf("%s %s %.3g CPUs in %s", g.source, g.limitName, q, where))
	case errors.Is(err, errUnlimited):
		notes = append(notes, fmt.Sprintf("%s sets no %s in %s", g.source, g.limitName, g.dir))
	case errors.Is(err, os.ErrNotExist):
		return fallback(g.source + " without the cpu controller's limit: " + err.Error())
	default:
		return fallback(fmt.Sprintf("%s %s unreadable: %v", g.source, g.limitName, err))
	}
	if _, err := readUsage(fs, g.usageFile, g.parseUsage); err != nil {
		return fallback(g.source + " usage unreadable: " + err.Error())
	}
	usage := func() (time.Duration, error) { return readUsage(fs, g.usageFile, g.parseUsage) }

	switch {
	case override > 0:
		return cpuPlan{usage: usage, capacity: override, source: g.source,
			reason: fmt.Sprintf("capacity set to %.3g CPUs by Config.CPUs", override)}
	case math.IsInf(limit, 1):
		return fallback("no CPU limit applies (" + strings.Join(notes, "; ") + "); using host-wide CPU")
	}
	return cpuPlan{usage: usage, capacity: limit, source: g.source, reason: strings.Join(notes, "; ")}
}

func readCFSQuota(fs hostFS, dir string) (float64, error) {
	q, err := fs.read(dir + "/cpu.cfs_quota_us")
	if err != nil {
		return 0, err
	}
	p, err := fs.read(dir + "/cpu.cfs_period_us")
	if err != nil {
		return 0, err
	}
	return parseCFSQuota(q, p)
}

func readUsage(fs hostFS, file string, parse func([]byte) (time.Duration, error)) (time.Duration, error) {
	data, err := fs.read(file)
	if err != nil {
		return 0, err
	}
	return parse(data)
}

// cpusetCount reads the CPUs the process's cpuset allows (v1 cpuset controller or v2 cpuset.cpus.effective).
func cpusetCount(fs hostFS, mounts []mount, pc procCgroups) (int, bool) {
	var files []string
	if dir, _ := v1Dir(mounts, pc, "cpuset"); dir != "" {
		files = append(files, dir+"/cpuset.effective_cpus", dir+"/cpuset.cpus")
	}
	if dir, _ := v2Dir(mounts, pc); dir != "" {
		files = append(files, dir+"/cpuset.cpus.effective")
	}
	for _, f := range files {
		data, err := fs.read(f)
		if err != nil {
			continue
		}
		if n, err := parseCPUSet(data); err == nil {
			return n, true
		}
	}
	return 0, false
}

// hostCPUs is the number of CPUs host-wide /proc/stat covers.
func hostCPUs() int {
	if n, err := cpu.Counts(true); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// hostUsage is the host-wide busy CPU time (every state but idle and iowait).
func hostUsage() (time.Duration, error) {
	ts, err := cpu.Times(false)
	if err != nil {
		return 0, err
	}
	if len(ts) == 0 {
		return 0, errors.New("loadshed: no host CPU times")
	}
	t := ts[0]
	busy := t.User + t.System + t.Nice + t.Irq + t.Softirq + t.Steal
	return time.Duration(busy * float64(time.Second)), nil
}
