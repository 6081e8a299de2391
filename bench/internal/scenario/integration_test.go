package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireCgroupV1 skips a test that needs root and the cgroup v1 cpu and cpuacct controllers, or fails it when
// FIBERGUARD_INTEGRATION=1.
func requireCgroupV1(t *testing.T) {
	t.Helper()
	err := CheckCgroupV1()
	if err == nil {
		return
	}
	if os.Getenv("FIBERGUARD_INTEGRATION") == "1" {
		t.Fatalf("integration prerequisite missing: %v (FIBERGUARD_INTEGRATION=1)", err)
	}
	t.Skipf("skipping: %v; set FIBERGUARD_INTEGRATION=1 to make this a failure", err)
}

func readTrim(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// ownGroup is this process's group in a v1 controller's hierarchy.
func ownGroup(t *testing.T, controller string) string {
	t.Helper()
	for line := range strings.Lines(readTrim(t, "/proc/self/cgroup")) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && hasItem(parts[1], controller) {
			return parts[2]
		}
	}
	t.Fatalf("no %s group", controller)
	return ""
}

// niceOf is the niceness of a thread, field 19 of /proc/PID/task/TID/stat.
func niceOf(t *testing.T, pid, tid int) int {
	t.Helper()
	stat := readTrim(t, fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAppInGroup starts a real app process in a new 0.5-CPU cpu+cpuacct group and checks where it runs, its
// GOMAXPROCS, niceness and CPU time, and that the group goes away.
func TestAppInGroup(t *testing.T) {
	requireCgroupV1(t)
	name := fmt.Sprintf("fiberguard-scenario-test-%d", os.Getpid())
	g, err := NewGroup(name, 0.5, "cpu", "cpuacct")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	if got := readTrim(t, filepath.Join(g.Dir("cpu"), "cpu.cfs_quota_us")); got != "50000" {
		t.Fatalf("quota %s, want 50000", got)
	}
	if got := readTrim(t, filepath.Join(g.Dir("cpu"), "cpu.cfs_period_us")); got != "100000" {
		t.Fatalf("period %s, want 100000", got)
	}

	a, err := StartApp(AppOptions{Env: []string{appEnv + "=1"}, Groups: []*Group{g}, Nice: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	groups, err := a.Cgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cpu", "cpuacct"} {
		if want := filepath.Join(ownGroup(t, c), name); groups[c] != want {
			t.Errorf("app's %s group %q, want %q", c, groups[c], want)
		}
	}
	var procs int
	if err := a.GetJSON("/procs", &procs); err != nil {
		t.Fatal(err)
	}
	if want := min(runtime.NumCPU(), 2); procs != want { // Go's default under a 0.5-CPU quota
		t.Errorf("GOMAXPROCS %d, want %d", procs, want)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", a.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if n := niceOf(t, a.Pid, tid); n != 7 {
			t.Errorf("thread %d at nice %d, want 7", tid, n)
		}
	}
	before, err := a.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	got := Attack(a.Base+"/work", 100, 500*time.Millisecond, 10*time.Second)
	after, err := a.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	if got.OK != got.Total || got.Total == 0 {
		t.Fatalf("attack: %+v", got)
	}
	if after <= before {
		t.Errorf("CPU time %v then %v after %d requests", before, after, got.OK)
	}

	a.Stop()
	g.Remove()
	for _, c := range []string{"cpu", "cpuacct"} {
		if _, err := os.Stat(g.Dir(c)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Remove: %v", g.Dir(c), err)
		}
	}
}

// TestCPUOnlyGroup checks a group in the cpu controller alone: the process's cpuacct group does not change.
func TestCPUOnlyGroup(t *testing.T) {
	requireCgroupV1(t)
	name := fmt.Sprintf("fiberguard-scenario-test-%d-cpu", os.Getpid())
	g, err := NewGroup(name, 1, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	if g.Dir("cpuacct") != "" {
		t.Fatalf("a cpu-only group has a cpuacct directory %q", g.Dir("cpuacct"))
	}
	nb, err := StartNeighbours(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Stop()
	pid := nb.cmds[0].Process.Pid
	if err := g.Add(pid); err != nil {
		t.Fatal(err)
	}
	got := readTrim(t, fmt.Sprintf("/proc/%d/cgroup", pid))
	if want := fmt.Sprintf(":cpu:%s\n", filepath.Join(ownGroup(t, "cpu"), name)); !strings.Contains(got+"\n", want) {
		t.Errorf("/proc/%d/cgroup:\n%s\nwant a line ending %q", pid, got, want)
	}
	if want := fmt.Sprintf(":cpuacct:%s\n", ownGroup(t, "cpuacct")); !strings.Contains(got+"\n", want) {
		t.Errorf("/proc/%d/cgroup:\n%s\nwant the cpuacct group unchanged, %q", pid, got, want)
	}
	if n := niceOf(t, pid, pid); n != 3 {
		t.Errorf("neighbour at nice %d, want 3", n)
	}
}

// TestRemoveStale checks that a group left by a dead driver goes, and one of a live driver stays.
func TestRemoveStale(t *testing.T) {
	requireCgroupV1(t)
	const prefix = "fiberguard-scenario-stale"
	live, err := NewGroup(fmt.Sprintf("%s-%d-x", prefix, os.Getpid()), 0, "cpu", "cpuacct")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	dead, err := NewGroup(fmt.Sprintf("%s-%d", prefix, deadPID(t)), 0, "cpu", "cpuacct")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Remove()

	RemoveStale(prefix, "cpu", "cpuacct")
	for _, c := range []string{"cpu", "cpuacct"} {
		if _, err := os.Stat(dead.Dir(c)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead driver's %s stayed: %v", dead.Dir(c), err)
		}
		if _, err := os.Stat(live.Dir(c)); err != nil {
			t.Errorf("the live driver's %s went: %v", live.Dir(c), err)
		}
	}
}

// deadPID returns the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	nb, err := StartNeighbours(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	pid := nb.cmds[0].Process.Pid
	nb.Stop()
	if running(pid) {
		t.Fatalf("pid %d still runs", pid)
	}
	return pid
}
