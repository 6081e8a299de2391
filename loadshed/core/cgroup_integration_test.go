package core

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The real-kernel tests run this test binary again as a child process, placed by the parent in cgroups it
// creates, and check what each built-in signal reads inside: the CPU signal against the child's CPU time as
// the kernel accounts it (/proc/self/stat), and every signal against what the child is doing (idle beside busy
// neighbours, burning what it may use, queueing goroutines behind each other).

const childEnv = "LOADSHED_CGROUP_CHILD"

func integrationRequired() bool { return os.Getenv("FIBERGUARD_INTEGRATION") == "1" }

// requireIntegration skips t with why, or fails it when FIBERGUARD_INTEGRATION=1.
func requireIntegration(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if integrationRequired() {
		t.Fatalf("integration prerequisite missing: %s (FIBERGUARD_INTEGRATION=1)", why)
	}
	t.Skipf("skipping: %s; set FIBERGUARD_INTEGRATION=1 to make this a failure", why)
}

// childReading is what the child measured over one window.
type childReading struct {
	Source   string  `json:"source"`
	Capacity float64 `json:"capacity"`
	Reason   string  `json:"reason"`
	CPU      float64 `json:"cpu"`      // NewCPU(0)
	Host     float64 `json:"host"`     // NewHostCPU()
	Sched    float64 `json:"sched"`    // NewSchedLatency(0), the peak over the window
	RunQ     float64 `json:"runq"`     // NewRunQueue(0), the peak over the window
	Default  float64 `json:"default"`  // DefaultSignal(0) on the adapters' default bands, the peak over the window
	Pressure float64 `json:"pressure"` // NewPressure(), -1 when unavailable
	PSIFile  string  `json:"psi_file"`
	// Throttled is how many of the window's readings of the default's CPU part saw its quota throttle the group,
	// of Readings.
	Throttled int `json:"throttled"`
	Readings  int `json:"readings"`
	// Used is the child's CPU time over the window as the kernel accounts it, in CPUs.
	Used float64 `json:"used"`
	Err  string  `json:"err"`
}

// TestCgroupChild is the child's body; it does nothing unless run by a real-kernel test.
func TestCgroupChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return
	}
	// Wait until the parent has moved us into the groups.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Printf("error: %v\n", err)
		return
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	switch mode {
	case "burn": // every P busy: all the CPU the process may use
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() { burnUntil(&stop) })
		}
	case "queue": // four runnable goroutines per P, each yielding after 2ms of work: each waits about 6ms
		for range 4 * runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for !stop.Load() {
					spin(2 * time.Millisecond)
					runtime.Gosched()
				}
			})
		}
	}
	cpuSig, host, sched, runq, def := NewCPU(0), NewHostCPU(), NewSchedLatency(0), NewRunQueue(0), DefaultSignal(0)
	psi, psiErr := NewPressure()
	r := childReading{Source: cpuSig.Source(), Capacity: cpuSig.Capacity(), Reason: cpuSig.Reason(), Pressure: -1}
	if psiErr == nil {
		r.PSIFile = psi.File()
		_, _ = psi.Load()
	}
	time.Sleep(300 * time.Millisecond) // let a quota settle into its steady state
	_, _ = cpuSig.Load()
	_, _ = host.Load()
	used0, err := kernelCPUTime()
	if err != nil {
		r.Err = err.Error()
	}
	start := time.Now()
	// Sample the latency signals as the Shedder would, every 20ms; keep their peak.
	for end := start.Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		s, err1 := sched.Load()
		q, err2 := runq.Load()
		d, err3 := def.Load()
		if err1 != nil || err2 != nil || err3 != nil {
			r.Err = fmt.Sprint(err1, err2, err3)
		}
		r.Readings++
		if def.util.(*CPU).Throttled() { // the default's own CPU part, read every 20ms
			r.Throttled++
		}
		r.Sched, r.RunQ, r.Default = math.Max(r.Sched, s), math.Max(r.RunQ, q), math.Max(r.Default, d)
	}
	used1, _ := kernelCPUTime()
	elapsed := time.Since(start)
	var errs []error
	var e error
	r.CPU, e = cpuSig.Load()
	errs = append(errs, e)
	r.Host, e = host.Load()
	errs = append(errs, e)
	if psiErr == nil {
		r.Pressure, e = psi.Load()
		errs = append(errs, e)
	}
	for _, e := range errs {
		if e != nil {
			r.Err = e.Error()
		}
	}
	r.Used = (used1 - used0).Seconds() / elapsed.Seconds()
	out, _ := json.Marshal(r)
	fmt.Printf("reading=%s\n", out)
}

func burnUntil(stop *atomic.Bool) {
	x := 0
	for !stop.Load() {
		x++
	}
	_ = x
}

// kernelCPUTime is this process's utime+stime from /proc/self/stat, in clock ticks of 10ms: coarse but
// independent of the getrusage and cgroup counters the signals read.
func kernelCPUTime() (time.Duration, error) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which is in parentheses and may hold spaces): state is field 3, utime 14.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/self/stat: %q", data)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc/self/stat times: %q", data)
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// env is a place for the child: the v1 groups (and optionally a unified v2 group) it joins, made by the parent.
type env struct {
	dirs []string
}

// newGroups creates a group named name under each v1 controller in ctrls (and under the unified hierarchy when
// unified is set), removed at the end of the test. It skips or fails t when that is impossible here.
func newGroups(t *testing.T, ctrls []string, unified bool) (env, map[string]string) {
	t.Helper()
	requireIntegration(t, os.Geteuid() == 0, "confining a process to a cgroup needs root")
	mi, err := os.ReadFile("/proc/self/mountinfo")
	requireIntegration(t, err == nil, "no /proc/self/mountinfo")
	cg, err := os.ReadFile("/proc/self/cgroup")
	requireIntegration(t, err == nil, "no /proc/self/cgroup")
	mounts, pc := parseMountinfo(mi), parseProcCgroup(cg)
	name := fmt.Sprintf("fiberguard-loadshed-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var e env
	made := map[string]string{}
	add := func(key, parent string) {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			requireIntegration(t, false, "cannot create a cgroup: "+err.Error())
		}
		t.Cleanup(func() { removeGroup(dir) })
		e.dirs = append(e.dirs, dir)
		made[key] = dir
	}
	for _, c := range ctrls {
		dir, _ := v1Dir(mounts, pc, c)
		requireIntegration(t, dir != "", "no cgroup v1 "+c+" controller mounted (this test needs the v1 layout)")
		if _, dup := made[dir]; !dup {
			add(c, dir)
			made[dir] = made[c]
		}
	}
	if unified {
		root := v2Root(mounts)
		requireIntegration(t, root != "", "no cgroup v2 (unified) mount")
		add("unified", root)
	}
	return e, made
}

// removeGroup removes a group, retrying while its processes are still exiting.
func removeGroup(dir string) {
	for i := 0; i < 50; i++ {
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func setQuota(t *testing.T, cpuGroup string, cpus float64) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cpuGroup, "cpu.cfs_period_us"), []byte("100000"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cpuGroup, "cpu.cfs_quota_us"), []byte(strconv.Itoa(int(cpus*100000))), 0); err != nil {
		t.Fatal(err)
	}
}

// busyNeighbours keeps every CPU of the host busy from this (parent) process, outside the child's groups.
func busyNeighbours(t *testing.T) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() { burnUntil(&stop) })
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
}

func TestRealCgroupHalfCPU(t *testing.T) {
	e, g := newGroups(t, []string{"cpu", "cpuacct"}, false)
	setQuota(t, g["cpu"], 0.5)

	t.Run("burning its quota: the group's usage over its quota", func(t *testing.T) {
		r := runChild(t, "burn", e, nil)
		if r.Source != SourceCgroupV1 || r.Capacity != 0.5 {
			t.Fatalf("child saw %s with %g CPUs (%s), want its cgroup's 0.5", r.Source, r.Capacity, r.Reason)
		}
		// What the kernel says the child used, over its quota: the signal must agree, whatever the host lets
		// the child have.
		want := r.Used / 0.5
		if math.Abs(r.CPU-want) > 0.12 {
			t.Fatalf("CPU signal read %.3f; the kernel accounted %.3f CPUs, i.e. %.3f of the quota", r.CPU, r.Used, want)
		}
		if r.Used > 0.45 && r.CPU < 0.85 {
			t.Fatalf("the child got its quota (%.3f CPUs) but the signal read %.3f", r.Used, r.CPU)
		}
	})

	t.Run("idle beside a busy host reads near 0", func(t *testing.T) {
		busyNeighbours(t)
		r := runChild(t, "idle", e, nil)
		assertIdle(t, r)
		if r.Throttled != 0 {
			t.Fatalf("an idle child's quota throttled it at %d of %d readings", r.Throttled, r.Readings)
		}
	})

	t.Run("burning two Ps in half a CPU: throttled", func(t *testing.T) {
		r := runChild(t, "burn", e, []string{"GOMAXPROCS=2"})
		// Two threads spend 50ms of quota in 25ms of each 100ms period, then wait: the group is throttled once
		// a period, and a fifth of the 20ms readings see the count grow.
		if r.Readings == 0 || r.Throttled < r.Readings/10 {
			t.Fatalf("a child burning twice its quota was throttled at %d of %d readings, want at least a tenth",
				r.Throttled, r.Readings)
		}
	})
}

// GOMAXPROCS=1 in a 2-CPU group (what automaxprocs sets in a pod whose limit rounds down to 1, or a service that
// sets it): the process can use one CPU, and its load is its own CPU over that one.
func TestRealGOMAXPROCSBelowTheQuota(t *testing.T) {
	requireIntegration(t, runtime.NumCPU() >= 2, "a 2-CPU quota needs a host of 2 CPUs or more")
	e, g := newGroups(t, []string{"cpu", "cpuacct"}, false)
	setQuota(t, g["cpu"], 2)
	one := []string{"GOMAXPROCS=1"}

	t.Run("burning its one P: full", func(t *testing.T) {
		r := runChild(t, "burn", e, one)
		if r.Source != SourceCgroupV1 || r.Capacity != 1 {
			t.Fatalf("child saw %s with %g CPUs (%s), want the group's usage with a capacity of GOMAXPROCS, 1",
				r.Source, r.Capacity, r.Reason)
		}
		if math.Abs(r.CPU-r.Used) > 0.12 {
			t.Fatalf("CPU signal read %.3f; the kernel accounted %.3f CPUs, of the one P", r.CPU, r.Used)
		}
		if r.Throttled != 0 {
			t.Fatalf("one thread in a 2-CPU quota was throttled at %d of %d readings", r.Throttled, r.Readings)
		}
	})

	t.Run("queueing on its one P: the default sheds everything ordinary", func(t *testing.T) {
		r := runChild(t, "queue", e, one)
		// Not throttled, the queue lasts: its excess takes the share to every ordinary request within the 2s,
		// whatever CPU the child got (the quota's half of it, or less beside other work).
		if r.Sched < 1 && r.RunQ < 1 || r.Default < 0.95 {
			t.Fatalf("queueing child read scheduling latency %.3f, run queue %.3f, default %.3f (used %.3f CPUs); "+
				"want a queue and the default at Upper (0.95) or above", r.Sched, r.RunQ, r.Default, r.Used)
		}
	})
}

// In a cpu-only group (v1, cpu and cpuacct mounted apart, cpuacct left at the root), the cpuacct usage is the
// host's: the signal must read this process instead, and say so.
func TestRealCgroupCPUOnlyGroup(t *testing.T) {
	e, g := newGroups(t, []string{"cpu"}, false)
	setQuota(t, g["cpu"], 1)

	t.Run("idle beside a busy host reads near 0", func(t *testing.T) {
		busyNeighbours(t)
		r := runChild(t, "idle", e, nil)
		if r.Source != SourceProcess || r.Capacity != 1 || !strings.Contains(r.Reason, "cpuacct group") {
			t.Fatalf("child saw %s with %g CPUs (%s); want this process over the 1-CPU quota, and why", r.Source, r.Capacity, r.Reason)
		}
		assertIdle(t, r)
	})

	t.Run("burning: this process over the quota", func(t *testing.T) {
		r := runChild(t, "burn", e, nil)
		if want := r.Used / 1; math.Abs(r.CPU-want) > 0.12 {
			t.Fatalf("CPU signal read %.3f; the kernel accounted %.3f CPUs of a 1-CPU quota", r.CPU, r.Used)
		}
	})
}

// With no limit, the CPU signal is this process's time over the CPUs it may run on.
func TestRealNoLimit(t *testing.T) {
	requireIntegration(t, runtime.GOOS == "linux", "the kernel's accounting is read from /proc (Linux)")

	t.Run("idle beside a busy host reads near 0", func(t *testing.T) {
		busyNeighbours(t)
		r := runChild(t, "idle", env{}, nil)
		if r.Source != SourceProcess {
			t.Fatalf("child saw %s (%s); want this process", r.Source, r.Reason)
		}
		assertIdle(t, r)
	})

	t.Run("queueing goroutines: scheduling latency and run queue above their targets", func(t *testing.T) {
		r := runChild(t, "queue", env{}, nil)
		if r.Sched < 1 || r.RunQ < 1 || r.Default < 0.9 {
			t.Fatalf("queueing child read scheduling latency %.3f, run queue %.3f, default %.3f; want both above 1 "+
				"and the default at Lower (0.9) or above", r.Sched, r.RunQ, r.Default)
		}
		// A queue that lasts, with no quota to throttle the process, is its CPU's: the default sheds every
		// ordinary request within the two seconds, whether the child had its CPUs or other work took some.
		if r.Default < 0.95 {
			t.Fatalf("queueing child used %.3f of %g CPUs and the default read %.3f; want Upper (0.95) or above",
				r.Used, r.Capacity, r.Default)
		}
	})

	t.Run("burning every P", func(t *testing.T) {
		r := runChild(t, "burn", env{}, nil)
		if want := r.Used / r.Capacity; math.Abs(r.CPU-want) > 0.12 {
			t.Fatalf("CPU signal read %.3f; the kernel accounted %.3f CPUs of %g", r.CPU, r.Used, r.Capacity)
		}
		if r.Used > 0.9*r.Capacity && r.Default < 0.9 {
			t.Fatalf("the child used %.3f of %g CPUs but the default signal read %.3f", r.Used, r.Capacity, r.Default)
		}
	})
}

// The hybrid layout's unified hierarchy has a cpu.pressure per group even without the cpu controller: a group of
// its own counts only the child's tasks. (It counts every wait for a CPU, though, including an idle process's
// wake-ups delayed by busy neighbours, which is why DefaultSignal leaves it out: an idle child in its own group
// beside two busy neighbours read 0.27, against 0.9 and more for a burning one.)
func TestRealPressure(t *testing.T) {
	e, _ := newGroups(t, nil, true)
	moreThreads := []string{"GOMAXPROCS=" + strconv.Itoa(2*runtime.NumCPU())}

	burn := runChild(t, "burn", e, moreThreads)
	if !strings.HasSuffix(burn.PSIFile, "/cpu.pressure") || !strings.Contains(burn.PSIFile, "fiberguard-loadshed-test") {
		t.Fatalf("pressure read from %q, want the child's own group", burn.PSIFile)
	}
	if burn.Pressure < 0.5 {
		t.Fatalf("%d burning threads on %d CPUs: pressure %.3f, want most of the time stalled", 2*runtime.NumCPU(), runtime.NumCPU(), burn.Pressure)
	}
}

func assertIdle(t *testing.T, r childReading) {
	t.Helper()
	if r.CPU > 0.1 {
		t.Fatalf("idle child: CPU signal %.3f (host %.3f), want about 0", r.CPU, r.Host)
	}
	if r.Default > 0.5 || r.RunQ >= 1 {
		t.Fatalf("idle child: default signal peaked at %.3f (scheduling latency %.3f, run queue %.3f), want far below "+
			"the 0.9 where shedding starts and the run queue below its target", r.Default, r.Sched, r.RunQ)
	}
	if r.Host < 0.6 {
		t.Fatalf("host-wide reading %.3f: the busy neighbours did not load the host, the test proves nothing", r.Host)
	}
}

func runChild(t *testing.T, mode string, e env, extraEnv []string) childReading {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), extraEnv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for _, d := range e.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatalf("moving the child into %s: %v", d, err)
		}
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("child did not finish:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		js, ok := strings.CutPrefix(line, "reading=")
		if !ok {
			continue
		}
		var r childReading
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		if r.Err != "" {
			t.Fatalf("child reading errors: %s", r.Err)
		}
		t.Logf("%s child: %s", mode, js)
		return r
	}
	t.Fatalf("child printed no reading:\n%s", out.String())
	return childReading{}
}

// v2Root is the mount point of the unified hierarchy's root, or "".
func v2Root(mounts []mount) string {
	for _, m := range mounts {
		if m.fstype == "cgroup2" && m.root == "/" {
			return m.point
		}
	}
	return ""
}
