package loadshed

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v3/cpu"
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
// NewHostCPU measures the whole machine instead. Load is meant for one sampler: each call measures the interval
// since the previous one.
type CPU struct {
	usage    func() (time.Duration, error) // cumulative CPU time
	capacity float64                       // CPUs the usage is divided by
	// perProcess caps the capacity by GOMAXPROCS at each reading: a Go process cannot run on more Ps.
	perProcess bool
	source     string
	reason     string
	now        func() time.Time
	sleep      func(time.Duration)
	// minWindow is the shortest interval measured; a sooner call repeats the last load.
	minWindow time.Duration

	mu        sync.Mutex
	primed    bool
	prevUsage time.Duration
	prevAt    time.Time
	last      float64
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
	return &CPU{usage: p.usage, capacity: p.capacity, perProcess: p.perProcess, source: p.source, reason: p.reason,
		now: time.Now, sleep: time.Sleep}
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

// Capacity is the number of CPUs the load is a fraction of.
func (c *CPU) Capacity() float64 {
	if c.perProcess {
		return math.Min(c.capacity, float64(runtime.GOMAXPROCS(0)))
	}
	return c.capacity
}

// Reason explains the choice of source and capacity.
func (c *CPU) Reason() string { return c.reason }

// String describes the signal, for logs and Stats.
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
		c.prevUsage, c.prevAt, c.primed = u, at, true
		c.sleep(max(primeWindow, c.minWindow))
	} else if c.now().Sub(c.prevAt) < c.minWindow {
		return c.last, nil
	}
	before := c.now()
	u, err := c.usage()
	if err != nil {
		return 0, err
	}
	load, err := cpuLoad(u-c.prevUsage, c.now().Sub(c.prevAt), c.Capacity())
	if err != nil {
		return 0, err
	}
	c.prevUsage, c.prevAt, c.last = u, before, load
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
	usage      func() (time.Duration, error)
	capacity   float64
	perProcess bool
	source     string
	reason     string
}

// detectCPU chooses the usage counter and the capacity. fs holds /proc and /sys (a fixture tree in tests),
// hostN is the host's CPU count and proc reads this process's CPU time.
func detectCPU(fs hostFS, override float64, hostN int, proc func() (time.Duration, error)) cpuPlan {
	limit := math.Inf(1) // the tightest of the cpuset and the quota
	var notes []string
	// process is the plan without a readable group usage: this process's CPU time over what it may run on. why
	// says why the group's usage is not read.
	process := func(why string) cpuPlan {
		p := cpuPlan{usage: proc, capacity: math.Min(limit, float64(hostN)), perProcess: true, source: SourceProcess}
		notes = append(notes, why+": reading this process's CPU time")
		if override > 0 {
			p.capacity, p.perProcess = override, false
			notes = append(notes, fmt.Sprintf("capacity set to %.3g CPUs by Config.CPUs", override))
		} else {
			notes = append(notes, fmt.Sprintf("capacity %.3g CPUs, capped by GOMAXPROCS", p.capacity))
		}
		p.reason = strings.Join(notes, "; ")
		return p
	}

	cg, err := fs.read("/proc/self/cgroup")
	if err != nil {
		return process("no cgroup information (" + err.Error() + ")")
	}
	mi, err := fs.read("/proc/self/mountinfo")
	if err != nil {
		return process("no mount information (" + err.Error() + ")")
	}
	pc, mounts := parseProcCgroup(cg), parseMountinfo(mi)

	if n, ok := cpusetCount(fs, mounts, pc); ok && n < hostN {
		limit = float64(n)
		notes = append(notes, fmt.Sprintf("cpuset allows %d CPUs", n))
	}

	// The group's CPU controller: where its limit is read, and where the usage of the limited group is.
	var g struct {
		source, limitName string // "cgroup v1", "quota"
		dir, top          string // the group and the mount point above it
		readLimit         func(dir string) (float64, error)
		// usageFile is the usage counter of the group at dir (a directory of the cpu hierarchy), or "" when
		// the group's usage cannot be read and why says so.
		usageFile  func(dir string) (file, why string)
		parseUsage func([]byte) (time.Duration, error)
	}
	if dir, top := v1Dir(mounts, pc, "cpu"); dir != "" {
		g.source, g.limitName, g.dir, g.top = SourceCgroupV1, "quota", dir, top
		g.readLimit = func(d string) (float64, error) { return readCFSQuota(fs, d) }
		g.parseUsage = parseCpuacctUsage
		acct, acctTop := v1Dir(mounts, pc, "cpuacct")
		g.usageFile = func(d string) (string, string) {
			switch {
			case acct == "":
				return "", "the cgroup v1 cpuacct controller is not mounted"
			case path.Clean(pc.v1["cpuacct"]) != path.Clean(pc.v1["cpu"]):
				return "", fmt.Sprintf("its cpuacct group %s is not its cpu group %s, so the group's usage is unknown",
					pc.v1["cpuacct"], pc.v1["cpu"])
			}
			return path.Join(acctTop, strings.TrimPrefix(d, top)) + "/cpuacct.usage", ""
		}
	} else if dir, top := v2Dir(mounts, pc); dir != "" {
		g.source, g.limitName, g.dir, g.top = SourceCgroupV2, "cpu.max", dir, top
		g.readLimit = func(d string) (float64, error) {
			data, err := fs.read(d + "/cpu.max")
			if err != nil {
				return 0, err
			}
			return parseCPUMax(data)
		}
		g.usageFile = func(d string) (string, string) { return d + "/cpu.stat", "" }
		g.parseUsage = parseCPUStatUsage
	} else {
		return process("no cgroup CPU controller found")
	}

	q, where, err := groupLimit(g.dir, g.top, g.readLimit)
	switch {
	case err == nil:
		limit = math.Min(limit, q)
		notes = append(notes, fmt.Sprintf("%s %s %.3g CPUs in %s", g.source, g.limitName, q, where))
	case errors.Is(err, errUnlimited):
		return process(fmt.Sprintf("no CPU limit applies (%s sets no %s in %s)", g.source, g.limitName, g.dir))
	case errors.Is(err, os.ErrNotExist):
		return process(g.source + " without the cpu controller's limit (" + err.Error() + ")")
	default:
		return process(fmt.Sprintf("%s %s unreadable (%v)", g.source, g.limitName, err))
	}

	// The quota binds the group at where: its usage is what fills the quota. Fall back to the process's own
	// group, then to the process, when that counter cannot be read.
	var usageFile string
	for _, d := range []string{where, g.dir} {
		f, why := g.usageFile(d)
		if f == "" {
			return process(why)
		}
		if _, err := readUsage(fs, f, g.parseUsage); err == nil {
			usageFile = f
			break
		} else if d == g.dir {
			return process(g.source + " usage unreadable (" + err.Error() + ")")
		}
	}
	usage := func() (time.Duration, error) { return readUsage(fs, usageFile, g.parseUsage) }
	if override > 0 {
		notes = append(notes, fmt.Sprintf("capacity set to %.3g CPUs by Config.CPUs", override))
		return cpuPlan{usage: usage, capacity: override, source: g.source, reason: strings.Join(notes, "; ")}
	}
	notes = append(notes, "usage from "+usageFile)
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
