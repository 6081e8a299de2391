package core

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"strings"
	"time"
)

// cpuPlan is what detectCPU chose.
type cpuPlan struct {
	usage      func() (time.Duration, error)
	capacity   float64
	perProcess bool
	// ownUsage, for a group's usage, is this process's CPU time, read beside it while GOMAXPROCS is below the
	// group's limit.
	ownUsage func() (time.Duration, error)
	// throttled, for a group's usage, reads the count of periods the quota throttled the limited group; nil when
	// it cannot be read.
	throttled func() (uint64, error)
	source    string
	reason    string
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
	notes = append(notes, "usage from "+usageFile, "this process's own CPU time over GOMAXPROCS while that is lower")
	plan := cpuPlan{usage: usage, capacity: limit, ownUsage: proc, source: g.source}
	statFile := where + "/cpu.stat"
	if _, err := readUsage(fs, statFile, parseThrottled); err == nil {
		plan.throttled = func() (uint64, error) { return readUsage(fs, statFile, parseThrottled) }
		notes = append(notes, "throttling from "+statFile)
	} else {
		notes = append(notes, "throttling unknown ("+err.Error()+")")
	}
	plan.reason = strings.Join(notes, "; ")
	return plan
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

func readUsage[T any](fs hostFS, file string, parse func([]byte) (T, error)) (T, error) {
	data, err := fs.read(file)
	if err != nil {
		var zero T
		return zero, err
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
