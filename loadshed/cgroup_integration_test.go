package loadshed

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The real-cgroup test confines a child process (this test binary, re-executed) to half a CPU and checks what the
// CPU signal reads inside it: near 1.0 when the child burns its quota, near 0 when it idles while the host is busy.

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

// TestCgroupChild is the child's body; it does nothing unless run by TestRealCgroupLimit.
func TestCgroupChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return
	}
	// Wait until the parent has moved us into the group.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Printf("error: %v\n", err)
		return
	}
	var stop atomic.Bool
	if mode == "burn" {
		for i := 0; i < runtime.NumCPU(); i++ {
			go func() {
				x := 0
				for !stop.Load() {
					x++
				}
				_ = x
			}()
		}
		defer stop.Store(true)
	}
	group := NewCPU(0)
	host := &CPU{usage: hostUsage, capacity: float64(hostCPUs()), source: "host", now: time.Now, sleep: time.Sleep}
	time.Sleep(500 * time.Millisecond) // let the quota settle into its steady state
	_, _ = group.Load()
	_, _ = host.Load()
	time.Sleep(2 * time.Second)
	gl, gerr := group.Load()
	hl, herr := host.Load()
	fmt.Printf("source=%q capacity=%g load=%.4f host=%.4f err=%v/%v\n", group.Source(), group.Capacity(), gl, hl, gerr, herr)
}

type childReading struct {
	source         string
	capacity       float64
	load, hostLoad float64
}

func TestRealCgroupLimit(t *testing.T) {
	requireIntegration(t, os.Geteuid() == 0, "confining a process to a cgroup needs root")
	mi, err := os.ReadFile("/proc/self/mountinfo")
	requireIntegration(t, err == nil, "no /proc/self/mountinfo")
	cg, err := os.ReadFile("/proc/self/cgroup")
	requireIntegration(t, err == nil, "no /proc/self/cgroup")
	mounts, pc := parseMountinfo(mi), parseProcCgroup(cg)

	name := fmt.Sprintf("fiberguard-loadshed-test-%d", os.Getpid())
	var dirs []string // groups the child must join
	var limit func() error
	cpuDir, _ := v1Dir(mounts, pc, "cpu")
	acctDir, _ := v1Dir(mounts, pc, "cpuacct")
	if cpuDir != "" && acctDir != "" {
		cpuGroup, acctGroup := filepath.Join(cpuDir, name), filepath.Join(acctDir, name)
		dirs = uniq(cpuGroup, acctGroup)
		limit = func() error {
			if err := os.WriteFile(filepath.Join(cpuGroup, "cpu.cfs_period_us"), []byte("100000"), 0); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(cpuGroup, "cpu.cfs_quota_us"), []byte("50000"), 0)
		}
	} else if root := v2Root(mounts); root != "" {
		// A new group under the root: the root may delegate the cpu controller even where the process's own
		// group cannot (a group with processes cannot enable controllers for its children).
		ctrl, _ := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
		requireIntegration(t, strings.Contains(string(ctrl), "cpu"), "cgroup v2 without the cpu controller enabled in "+root)
		group := filepath.Join(root, name)
		dirs = []string{group}
		limit = func() error { return os.WriteFile(filepath.Join(group, "cpu.max"), []byte("50000 100000"), 0) }
	} else {
		requireIntegration(t, false, "no cgroup CPU controller mounted")
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			requireIntegration(t, false, "cannot create a cgroup: "+err.Error())
		}
		d := d
		t.Cleanup(func() { _ = os.Remove(d) })
	}
	if err := limit(); err != nil {
		t.Fatalf("setting the CPU limit: %v", err)
	}

	t.Run("burning its quota reads near 1", func(t *testing.T) {
		r := runChild(t, "burn", dirs)
		if r.source == "host" || r.capacity != 0.5 {
			t.Fatalf("child saw %s with %g CPUs, want its cgroup's 0.5", r.source, r.capacity)
		}
		if r.load < 0.85 || r.load > 1.15 {
			t.Fatalf("child burning half a CPU read load %.3f, want about 1", r.load)
		}
	})

	t.Run("idle beside a busy host reads near 0", func(t *testing.T) {
		var stop atomic.Bool
		defer stop.Store(true)
		for i := 0; i < runtime.NumCPU(); i++ { // busy neighbours, outside the group
			go func() {
				x := 0
				for !stop.Load() {
					x++
				}
				_ = x
			}()
		}
		r := runChild(t, "idle", dirs)
		if r.load > 0.1 {
			t.Fatalf("idle child read load %.3f (host %.3f), want about 0", r.load, r.hostLoad)
		}
		if r.hostLoad < 0.6 {
			t.Fatalf("host-wide reading %.3f: the busy neighbours did not load the host, the test proves nothing", r.hostLoad)
		}
	})
}

func runChild(t *testing.T, mode string, dirs []string) childReading {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
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
	for _, d := range dirs {
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
	var r childReading
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "source=") {
			continue
		}
		var errs string
		if _, err := fmt.Sscanf(line, "source=%q capacity=%g load=%g host=%g err=%s", &r.source, &r.capacity, &r.load, &r.hostLoad, &errs); err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		if errs != "<nil>/<nil>" {
			t.Fatalf("child reading errors: %s", errs)
		}
		t.Logf("%s child: %s", mode, line)
		return r
	}
	t.Fatalf("child printed no reading:\n%s", out.String())
	return r
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

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}
