//go:build linux

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/fiberapp"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
	"golang.org/x/sys/unix"
)

// The loadshed test runs the app in a child process (this test binary again, lsFiberEnv naming its version:
// Fiber v2, Fiber v3 or net/http) that the parent places in a cgroup v1 group with a CPU quota before the app starts, so that the
// default signal finds the limit the way it would in a container.

const (
	lsFiberEnv = "FIBERGUARD_E2E_LOADSHED_FIBER"
	lsReady    = "LOADSHED-READY "

	// lsQuota is the group's CPU limit.
	lsQuota = 0.5
	// lsWork is the CPU time each request to /work burns.
	lsWork = 5 * time.Millisecond
	// lsLightWork is the CPU time each request to /light burns.
	lsLightWork = time.Millisecond
	// lsPhase is how long each phase offers its load.
	lsPhase = 10 * time.Second
	// lsOverload is the offered load in the overload phase, as a multiple of what the quota serves.
	lsOverload = 4
	// lsLight is the offered load in the light phase, as a share of what the quota serves going by lsWork.
	lsLight = 0.2
	// lsStarvedLight is the rate, per second, at which the starved test measures the app's unloaded latency.
	lsStarvedLight = 10.0
	// lsStarvedP99 bounds the starved app's admitted p99, as a multiple of its unloaded p99. The goal is 5×
	// (BENCHMARKS.md measures it); this machine read 2.5–5.4× over 7 runs of this test, where the default
	// before the run queue let it reach 20–40× in the same scenario with 1 ms requests. The bound leaves room
	// for a busy CI machine and still fails that.
	lsStarvedP99 = 10
	// lsOnset is how long the starved test gives the controller to find the queue before it judges latency; the
	// matrix's -warm split is the same.
	lsOnset = 2 * time.Second
)

// TestLoadshedInCgroup runs an app with loadshed's default middleware (NewShedder with no Config, the
// Shedder behind New()) in a child process confined to a 0.5-CPU cgroup, and drives it open loop:
//   - lightly loaded (a fifth of what its quota serves) while busy neighbours outside its group hold every CPU of
//     the host: a host-wide reading would shed everything, the group's own sheds at most 1 %;
//   - at 4 times what its quota serves: it sheds at least half, every rejection a 503 with
//     Fiberguard-Rejected-By: loadshed/default, and goes on serving at least a quarter of what the quota serves.
//     (Timeouts are logged, not checked: on a host busier than its share, the group gets less than its quota.)
//
// It runs on each version's adapter: Fiber v2, Fiber v3 and net/http.
func TestLoadshedInCgroup(t *testing.T) {
	if name := os.Getenv(lsFiberEnv); name != "" {
		loadshedChild(name)
	}
	itest.RequireRoot(t)
	sh := itest.RequireBinary(t, "sh")
	fiberapp.Each(t, func(t *testing.T, fv fiberapp.Version) { testLoadshedInCgroup(t, fv, sh) })
}

func testLoadshedInCgroup(t *testing.T, fv fiberapp.Version, sh string) {
	group := newCPUGroup(t, lsQuota)
	app := startLoadshedApp(t, fv, group)
	status := app.status(t)
	if !slices.ContainsFunc(status.Readings, func(r loadshedcore.Reading) bool { return r.Signal == "CPU of cgroup v1 over 0.5 CPUs" }) {
		t.Fatalf("the default signal does not read the group's quota: %+v", status)
	}

	// Light load beside busy neighbours.
	stopNeighbours := startNeighbours(t, sh, runtime.NumCPU(), 0)
	cpu0, host0 := app.cpuTime(t), hostTimes(t)
	light := offer(app.base+"/work", lsLight*lsQuota/lsWork.Seconds(), lsPhase)
	cpu1, host1 := app.cpuTime(t), hostTimes(t)
	stopNeighbours()
	t.Logf("light load beside neighbours: %+v; host busy %.2f; status %+v", light, host1.busySince(host0), app.status(t))
	if busy := host1.busySince(host0); busy < 0.8 {
		t.Fatalf("the host was %.0f%% busy beside the neighbours: the light phase proves nothing", 100*busy)
	}
	if light.shed > light.sent/100 || light.ok < light.sent*99/100 {
		t.Errorf("lightly loaded beside busy neighbours: %d of %d shed, %d served; want at most 1 %% shed and the rest served",
			light.shed, light.sent, light.ok)
	}
	if light.ok == 0 {
		t.Fatal("nothing served under light load")
	}

	// What the quota serves, from the CPU time the served requests took (the kernel's accounting).
	perRequest := (cpu1 - cpu0) / time.Duration(light.ok)
	capacity := lsQuota / perRequest.Seconds()
	over := offer(app.base+"/work", lsOverload*capacity, lsPhase)
	t.Logf("%.1f ms of CPU a request: the quota serves %.0f/s; at %.0f/s: %+v; status %+v",
		ms(perRequest), capacity, lsOverload*capacity, over, app.status(t))
	if over.shed < over.sent/2 || over.wrong != 0 {
		t.Errorf("overloaded: %d of %d shed with loadshed's headers, %d other 503s; want at least half shed, each with its headers",
			over.shed, over.sent, over.wrong)
	}
	if over.ok < int(0.25*capacity*lsPhase.Seconds()) {
		t.Errorf("overloaded: %d served in %v, want at least a quarter of the %.0f/s the quota serves", over.ok, lsPhase, capacity)
	}
}

// TestLoadshedStarved runs the same app with no CPU limit (in this process's groups) beside busy neighbours at
// nice −5, which leave it a fraction of the CPUs, and offers it half of what it serves on a quiet host: more than
// it gets. The default signal must see this process's overload though its CPU use is low: it sheds at least 5 %,
// with no timeouts, and the admitted p99 stays within lsStarvedP99 times the p99 of the same app at a light rate
// beside the same neighbours (its unloaded p99).
func TestLoadshedStarved(t *testing.T) {
	itest.RequireRoot(t)
	sh := itest.RequireBinary(t, "sh")
	fiberapp.Each(t, func(t *testing.T, fv fiberapp.Version) { testLoadshedStarved(t, fv, sh) })
}

func testLoadshedStarved(t *testing.T, fv fiberapp.Version, sh string) {
	app := startLoadshedApp(t, fv, nil)

	// What a request costs, on the quiet host.
	cpu0 := app.cpuTime(t)
	quiet := offer(app.base+"/work", lsStarvedLight, 3*time.Second)
	perRequest := (app.cpuTime(t) - cpu0) / time.Duration(max(quiet.ok, 1))
	quietCapacity := float64(runtime.NumCPU()) / perRequest.Seconds()

	startNeighbours(t, sh, runtime.NumCPU(), -5) // stopped with the test
	time.Sleep(time.Second)
	unloaded := offer(app.base+"/work", lsStarvedLight, 5*time.Second)
	rate := quietCapacity / 2
	cpu1 := app.cpuTime(t)
	started := time.Now()
	over := offer(app.base+"/work", rate, lsPhase)
	got := (app.cpuTime(t) - cpu1).Seconds() / time.Since(started).Seconds()
	t.Logf("%.1f ms of CPU a request, %.0f/s on the quiet host; beside the neighbours at %.0f/s: %v; at %.0f/s: %v, "+
		"the app got %.2f CPUs; status %+v", ms(perRequest), quietCapacity, lsStarvedLight, unloaded, rate, over, got,
		app.status(t))
	if want := rate * perRequest.Seconds(); got > 0.8*want {
		t.Fatalf("the app got %.2f CPUs of the %.2f its load wants: the neighbours did not starve it, the test proves nothing", got, want)
	}
	if over.shed < over.sent/20 || over.wrong != 0 {
		t.Errorf("starved: %d of %d shed with loadshed's headers, %d other 503s; want at least 5 %% shed, each with its headers",
			over.shed, over.sent, over.wrong)
	}
	if over.ok == 0 || over.timeouts != 0 || over.errors != 0 {
		t.Fatalf("starved: %d served, %d timeouts, %d errors; want requests served and none lost", over.ok, over.timeouts, over.errors)
	}
	// The onset, before the controller has read the queue, is the step's goal (BENCHMARKS.md); this judges the
	// latency it holds once it has.
	onset, steady := over.p99Sent(0, lsOnset), over.p99Sent(lsOnset, lsPhase)
	t.Logf("admitted p99: %v in the first %v, %v after (%.1f× the unloaded p99)", onset, lsOnset, steady,
		float64(steady)/float64(max(unloaded.p99(), 1)))
	if limit := lsStarvedP99 * unloaded.p99(); steady > limit {
		t.Errorf("starved: admitted p99 %v after the first %v, want at most %d× the unloaded p99 beside the same neighbours (%v)",
			steady, lsOnset, lsStarvedP99, unloaded.p99())
	}
}

// lsApp is the child process serving the app.
type lsApp struct {
	base string
	pid  int
}

// startLoadshedApp starts the app of version fv in group (nil: in this process's groups), with env added to its
// environment, and returns once it serves. It stops with the test.
func startLoadshedApp(t *testing.T, fv fiberapp.Version, group *cpuGroup, env ...string) *lsApp {
	t.Helper()
	self, err := os.Executable()
	itest.Require(t, err == nil, "cannot find the test binary")
	cmd := exec.Command(self, "-test.run=^TestLoadshedInCgroup$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(append(os.Environ(), lsFiberEnv+"="+fv.Name()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive a test killed hard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	err = cmd.Start()
	_ = outW.Close()
	if err != nil {
		_ = outR.Close()
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		output strings.Builder
		ready  = make(chan string, 1)
		read   = make(chan struct{})
	)
	go func() {
		defer close(read)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), lsReady); ok {
				ready <- addr
			}
			mu.Lock()
			output.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	log := func() string {
		mu.Lock()
		defer mu.Unlock()
		return output.String()
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = stdin.Close() // the child shuts the app down and exits
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("app process: %v\n%s", err, log())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("app process did not exit when told to\n%s", log())
		}
		<-read
	})
	a := &lsApp{pid: cmd.Process.Pid}
	if group != nil {
		if err := group.add(a.pid); err != nil {
			t.Fatalf("moving the app into its group: %v", err)
		}
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case addr := <-ready:
		a.base = "http://" + addr
	case err := <-exited:
		exited <- err
		t.Fatalf("app process exited: %v\n%s", err, log())
	case <-time.After(30 * time.Second):
		t.Fatalf("app not serving within 30 s\n%s", log())
	}
	return a
}

func (a *lsApp) status(t *testing.T) loadshedcore.Status {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(a.base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s loadshedcore.Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("status: %v", err)
	}
	return s
}

// cpuTime is the CPU time the app's process has used (utime + stime in /proc/PID/stat, in clock ticks of 10 ms).
func (a *lsApp) cpuTime(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(a.pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold anything: utime and stime are the
	// 14th and 15th fields of the line, the 12th and 13th after the name.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("/proc/%d/stat: %v", a.pid, err)
	}
	return time.Duration(user+sys) * 10 * time.Millisecond
}

// loadshedChild serves the app until its stdin closes, then exits without returning to the test framework.
func loadshedChild(name string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "loadshed app:", err)
		os.Exit(2)
	}
	fv, ok := fiberapp.ByName(name)
	if !ok {
		fail(fmt.Errorf("no version %q", name))
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil { // the parent has placed us in the group
		fail(err)
	}
	rounds := burnRounds(lsWork)
	shedder := fv.NewShedder()
	app := fv.NewApp()
	// Before the middleware: the status is never shed.
	app.Get("/status", func() string {
		b, _ := json.Marshal(shedder.Status())
		return string(b)
	})
	app.Use(shedder.Handler())
	app.Get("/work", func() string { return "done " + strconv.Itoa(int(burn(rounds))) })
	lightRounds := burnRounds(lsLightWork)
	app.Get("/light", func() string { return "done " + strconv.Itoa(int(burn(lightRounds))) })
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Serve(ln) }()
	fmt.Println(lsReady + ln.Addr().String())
	_, _ = io.Copy(io.Discard, in)
	if err := app.Shutdown(5 * time.Second); err != nil {
		fail(err)
	}
	if err := <-served; err != nil {
		fail(err)
	}
	_ = shedder.Close()
	os.Exit(0)
}

// burn hashes a kilobyte rounds times, each round over the last one's sum, and returns a byte of the result.
func burn(rounds int) byte {
	var buf [1024]byte
	for range rounds {
		sum := sha256.Sum256(buf[:])
		copy(buf[:], sum[:])
	}
	return buf[0]
}

// burnRounds is how many rounds of burn take d of CPU time, measured on this thread's own clock, which neither
// neighbours nor a quota slow down.
func burnRounds(d time.Duration) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for n := 100; ; n *= 2 {
		start := threadCPU()
		_ = burn(n)
		if took := threadCPU() - start; took >= 50*time.Millisecond {
			return max(1, int(float64(n)*float64(d)/float64(took)))
		}
	}
}

// lsOutcome counts the answers to an open-loop run.
type lsOutcome struct {
	sent, ok int
	shed     int // 503 with Fiberguard-Rejected-By: loadshed/default
	wrong    int // any other answer
	timeouts int
	errors   int // no answer otherwise
	skipped  int // not sent: too many in flight
	// served are the latencies of the 200 answers, and sentAt when each of them was sent, from the start.
	served, sentAt []time.Duration
	// firstShed is when the first request shed was sent, from the start; -1 when none was.
	firstShed time.Duration
}

func (o lsOutcome) String() string {
	return fmt.Sprintf("{sent:%d ok:%d shed:%d wrong:%d timeouts:%d errors:%d skipped:%d p99:%v}",
		o.sent, o.ok, o.shed, o.wrong, o.timeouts, o.errors, o.skipped, o.p99())
}

// p99 is the 99th percentile of the served latencies, 0 when none was served.
func (o lsOutcome) p99() time.Duration { return o.p99Sent(0, time.Duration(math.MaxInt64)) }

// p99Sent is the 99th percentile of the latencies of the requests sent in [from, to) from the start, 0 when
// none of them was served.
func (o lsOutcome) p99Sent(from, to time.Duration) time.Duration {
	var s []time.Duration
	for i, at := range o.sentAt {
		if at >= from && at < to {
			s = append(s, o.served[i])
		}
	}
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}

// offer sends GET url open loop at rate per second for d, whatever the answers' latency, and counts the
// answers once every request has one (or timed out). A request due while 2048 are in flight is not sent.
func offer(url string, rate float64, d time.Duration) lsOutcome {
	tr := &http.Transport{MaxIdleConnsPerHost: 2048}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var (
		o     = lsOutcome{firstShed: -1}
		mu    sync.Mutex
		wg    sync.WaitGroup
		slots = make(chan struct{}, 2048)
	)
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if time.Since(start) >= d || due.Sub(start) >= d {
			break
		}
		time.Sleep(time.Until(due))
		select {
		case slots <- struct{}{}:
		default:
			o.skipped++
			continue
		}
		o.sent++
		wg.Go(func() {
			defer func() { <-slots }()
			began := time.Now()
			at := began.Sub(start)
			status, by, err := getOnce(client, url)
			took := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				o.timeouts++
			case err != nil:
				o.errors++
			case status == http.StatusOK:
				o.ok++
				o.served = append(o.served, took)
				o.sentAt = append(o.sentAt, at)
			case status == http.StatusServiceUnavailable && by == "loadshed/default":
				o.shed++
				if o.firstShed < 0 || at < o.firstShed {
					o.firstShed = at
				}
			default:
				o.wrong++
			}
		})
	}
	wg.Wait()
	return o
}

// getOnce returns the status and Fiberguard-Rejected-By header of GET url, reading the body to its end so that
// the connection is reused.
func getOnce(client *http.Client, url string) (int, string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, "", err
	}
	return resp.StatusCode, resp.Header.Get("Fiberguard-Rejected-By"), nil
}

// startNeighbours starts n busy-loop shell processes at a niceness in this process's groups, outside the app's;
// the returned func stops them (by PID) and waits for them. They stop with the test at the latest.
func startNeighbours(t *testing.T, sh string, n, nice int) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	stop = sync.OnceFunc(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	t.Cleanup(stop)
	for range n {
		c := exec.Command(sh, "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		if err := unix.Setpriority(unix.PRIO_PROCESS, c.Process.Pid, nice); err != nil {
			t.Fatalf("niceness %d for a neighbour: %v", nice, err)
		}
	}
	return stop
}

// cpuTimes are the host's CPU times from the first line of /proc/stat, in clock ticks.
type cpuTimes struct{ busy, total int64 }

func hostTimes(t *testing.T) cpuTimes {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var c cpuTimes
	for i, f := range strings.Fields(line)[1:] { // user nice system idle iowait irq softirq steal ...
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q", line)
		}
		c.total += v
		if i != 3 && i != 4 { // idle, iowait
			c.busy += v
		}
	}
	return c
}

// busySince is the share of the host's CPU time that was busy between prev and c.
func (c cpuTimes) busySince(prev cpuTimes) float64 {
	if c.total == prev.total {
		return 0
	}
	return float64(c.busy-prev.busy) / float64(c.total-prev.total)
}

// cpuGroup is a new cgroup v1 group in the cpu and cpuacct hierarchies, below this process's own groups.
type cpuGroup struct{ dirs []string }

// newCPUGroup creates a group limited to cpus CPUs, removed when the test ends (after the processes in it have
// exited). It skips or fails t where that is impossible: not root, or not the cgroup v1 layout.
func newCPUGroup(t *testing.T, cpus float64) *cpuGroup {
	t.Helper()
	mountinfo, err1 := os.ReadFile("/proc/self/mountinfo")
	own, err2 := os.ReadFile("/proc/self/cgroup")
	itest.Require(t, err1 == nil && err2 == nil, "no /proc/self/mountinfo or /proc/self/cgroup")
	name := fmt.Sprintf("fiberguard-e2e-loadshed-%d-%d", os.Getpid(), time.Now().UnixNano())
	g := &cpuGroup{}
	for _, ctrl := range []string{"cpu", "cpuacct"} {
		parent := v1GroupDir(string(mountinfo), string(own), ctrl)
		itest.Require(t, parent != "", "no cgroup v1 "+ctrl+" controller mounted (the test limits the app with a v1 CPU quota)")
		dir := filepath.Join(parent, name)
		if slices.Contains(g.dirs, dir) {
			continue // co-mounted with cpu
		}
		err := os.Mkdir(dir, 0o755)
		itest.Require(t, err == nil, fmt.Sprintf("cannot create a cgroup: %v", err))
		g.dirs = append(g.dirs, dir)
		t.Cleanup(func() {
			// The group's processes may still be exiting.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if err := os.Remove(dir); err == nil || time.Now().After(deadline) {
					return
				}
			}
		})
	}
	for file, v := range map[string]int{"cpu.cfs_period_us": 100000, "cpu.cfs_quota_us": int(cpus * 100000)} {
		if err := os.WriteFile(filepath.Join(g.dirs[0], file), []byte(strconv.Itoa(v)), 0); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// add moves a process, all its threads, into the group.
func (g *cpuGroup) add(pid int) error {
	for _, dir := range g.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// v1GroupDir is the directory of this process's group in the v1 hierarchy of controller ctrl, "" when that
// controller is not mounted as cgroup v1. mountinfo and procCgroup are /proc/self/mountinfo and /proc/self/cgroup.
func v1GroupDir(mountinfo, procCgroup, ctrl string) string {
	group := ""
	for line := range strings.Lines(procCgroup) {
		// hierarchy-ID:controller-list:path
		if f := strings.SplitN(strings.TrimSpace(line), ":", 3); len(f) == 3 && slices.Contains(strings.Split(f[1], ","), ctrl) {
			group = f[2]
		}
	}
	for line := range strings.Lines(mountinfo) {
		// ID parent major:minor root mount-point options [optional fields] - fstype source super-options
		before, after, ok := strings.Cut(strings.TrimSpace(line), " - ")
		pre, post := strings.Fields(before), strings.Fields(after)
		if !ok || group == "" || len(pre) < 5 || len(post) < 3 || post[0] != "cgroup" ||
			!slices.Contains(strings.Split(post[2], ","), ctrl) {
			continue
		}
		rel, ok := strings.CutPrefix(group, pre[3])
		if !ok {
			rel = "" // our group lies outside the mounted part (another cgroup namespace): use its top
		}
		return filepath.Join(pre[4], rel)
	}
	return ""
}
