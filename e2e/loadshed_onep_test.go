//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/fiberapp"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
)

const (
	// lsOnePOverload is the offered load of TestLoadshedOneP, as a multiple of what its CPU serves: where a run
	// queue counted in full shed most while the CPU sat idle (BENCHMARKS.md).
	lsOnePOverload = 4
	// lsOnePBusy is the least share of the overload phase, after its onset, for which the app must have used its
	// CPU or waited for it (run, waiting on a run queue or throttled by its quota).
	lsOnePBusy = 0.9
)

// TestLoadshedOneP runs the app with GOMAXPROCS=1 in a 1-CPU group, what Go's own default or automaxprocs sets
// in a 1-CPU container, and offers it 4 times what its CPU serves. Every arriving request is a runnable goroutine
// until it has been read, whether it is then served or rejected, so its run queue holds arrivals whatever share
// is shed; a controller that took them for an overload would go on shedding while the CPU sat idle. The app must
// shed (most of the load, each rejection with its headers, nothing lost) and keep its CPU at work while it does:
// from the onset on, its threads ran, waited for a CPU or were throttled at least 90 % of the time. Busy
// neighbours do not break that: a thread they hold off a CPU waits on its run queue.
func TestLoadshedOneP(t *testing.T) {
	itest.RequireRoot(t)
	fiberapp.Each(t, testLoadshedOneP)
}

func testLoadshedOneP(t *testing.T, fv fiberapp.Version) {
	group := newCPUGroup(t, 1)
	app := startLoadshedApp(t, fv, group, "GOMAXPROCS=1")

	// What a request costs, from the kernel's accounting at a light load.
	perRequest, light := app.costAtALightLoad(t, "/work", lsWork, 5*time.Second)
	capacity := 1 / perRequest.Seconds()
	if light.ok == 0 || light.shed > light.sent/100 {
		t.Fatalf("light load: %v; want it served", light)
	}

	// The overload; the busy share is judged from the onset on.
	at := make(chan schedTimes, 1)
	go func() {
		time.Sleep(lsOnset)
		at <- app.schedTimes(t, group)
	}()
	over := offer(app.base+"/work", lsOnePOverload*capacity, lsPhase)
	from, to := <-at, app.schedTimes(t, group)
	busy := to.busySince(from)
	t.Logf("%.1f ms of CPU a request at a light load, %.0f/s; at %.0f/s: %v, %.0f/s served; after the onset the app "+
		"ran %.2f, waited %.2f, was throttled %.2f of the time; status %+v", ms(perRequest), capacity,
		lsOnePOverload*capacity, over, float64(over.ok)/lsPhase.Seconds(), to.share(from, to.run-from.run),
		to.share(from, to.wait-from.wait), to.share(from, to.throttled-from.throttled), app.status(t))
	if over.shed < over.sent/2 || over.wrong != 0 {
		t.Errorf("%d× overload: %d of %d shed with loadshed's headers, %d other 503s; want at least half shed, each "+
			"with its headers", lsOnePOverload, over.shed, over.sent, over.wrong)
	}
	if over.ok == 0 || over.timeouts != 0 || over.errors != 0 {
		t.Fatalf("%d× overload: %d served, %d timeouts, %d errors; want requests served and none lost", lsOnePOverload,
			over.ok, over.timeouts, over.errors)
	}
	if busy < lsOnePBusy {
		t.Errorf("%d× overload at GOMAXPROCS=1: the app ran, waited or was throttled %.2f of the time while it shed "+
			"%d of %d; want at least %.2f: it shed while its CPU sat idle", lsOnePOverload, busy, over.shed, over.sent,
			lsOnePBusy)
	}
}

// costAtALightLoad is the CPU time a request to path takes, from the kernel's accounting over d of a light load
// (lsLight of one CPU going by work, the CPU time the route burns), with the outcome of that load.
func (a *lsApp) costAtALightLoad(t *testing.T, path string, work, d time.Duration) (time.Duration, lsOutcome) {
	cpu0 := a.cpuTime(t)
	light := offer(a.base+path, lsLight/work.Seconds(), d)
	return (a.cpuTime(t) - cpu0) / time.Duration(max(light.ok, 1)), light
}

// schedTimes is what the kernel accounted to a process's threads by one instant: the time they ran and waited on
// a run queue (/proc/PID/task/*/schedstat), and the time its group's quota throttled it.
type schedTimes struct {
	at                   time.Time
	run, wait, throttled time.Duration
}

// busySince is the share of the time since prev that the process ran, waited for a CPU or was throttled.
func (s schedTimes) busySince(prev schedTimes) float64 {
	return s.share(prev, s.run-prev.run+s.wait-prev.wait+s.throttled-prev.throttled)
}

// share is d over the time since prev.
func (s schedTimes) share(prev schedTimes, d time.Duration) float64 {
	return d.Seconds() / s.at.Sub(prev.at).Seconds()
}

func (a *lsApp) schedTimes(t *testing.T, group *cpuGroup) schedTimes {
	s := schedTimes{at: time.Now()}
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(a.pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		t.Errorf("no schedstat for the app's threads (%v): the kernel needs CONFIG_SCHEDSTATS", err)
		return s
	}
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue // a thread that has exited
		}
		// run time, run-queue wait (both ns), time slices
		if f := strings.Fields(string(b)); len(f) >= 2 {
			run, err1 := strconv.ParseInt(f[0], 10, 64)
			wait, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 == nil && err2 == nil {
				s.run += time.Duration(run)
				s.wait += time.Duration(wait)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(group.dirs[0], "cpu.stat"))
	if err != nil {
		t.Errorf("the group's cpu.stat: %v", err)
		return s
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "throttled_time "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			s.throttled = time.Duration(n)
		}
	}
	return s
}

const (
	// lsStepLight and lsStepOver are the two loads of TestLoadshedStep, as multiples of what its CPU serves.
	lsStepLight, lsStepOver = 0.25, 3
	// lsStepFirstShed is the longest TestLoadshedStep allows from the step to the first request shed, the step's
	// goal in BENCHMARKS.md (this test measures 3–11 ms on an idle machine).
	lsStepFirstShed = 100 * time.Millisecond
)

// TestLoadshedStep offers the app, with GOMAXPROCS=1 in a 1-CPU group, a quarter of what its CPU serves, where
// its sampler rests, then three times it on new connections. The sampler's goroutine waits for the
// one P behind the arrivals; the requests themselves must find the reading due and shed within a few readings,
// not at the end of the resting wait.
func TestLoadshedStep(t *testing.T) {
	itest.RequireRoot(t)
	fiberapp.Each(t, testLoadshedStep)
}

func testLoadshedStep(t *testing.T, fv fiberapp.Version) {
	group := newCPUGroup(t, 1)
	app := startLoadshedApp(t, fv, group, "GOMAXPROCS=1")

	perRequest, light := app.costAtALightLoad(t, "/light", lsLightWork, 3*time.Second)
	capacity := 1 / perRequest.Seconds()
	// Busy neighbours may hold the app's one thread off a CPU for long enough to shed a few (TestLoadshedStarved).
	if light.ok == 0 || light.shed > light.sent/20 {
		t.Fatalf("light load: %v; want it served", light)
	}
	quiet := offer(app.base+"/light", lsStepLight*capacity, 2*time.Second)
	// The sampler mostly rests here; a reading that finds a goroutine runnable (half of Lower: not quiet) wakes
	// it for a few readings, so the step may find it either way.
	st := app.status(t)
	if quiet.shed > quiet.sent/20 {
		t.Fatalf("at %.2f× of capacity: %v, status %+v; want it served", lsStepLight, quiet, st)
	}
	over := offer(app.base+"/light", lsStepOver*capacity, 2*time.Second)
	t.Logf("%.0f/s served by a light request's cost; at %.0f/s after %.0f/s (sampler resting: %v): %v, first shed "+
		"%v after the step, p99 of the first second %v", capacity, lsStepOver*capacity, lsStepLight*capacity,
		st.Resting, over, over.firstShed, over.p99Sent(0, time.Second))
	if over.firstShed < 0 || over.firstShed > lsStepFirstShed {
		t.Errorf("a step from %.2f× to %v× of capacity at GOMAXPROCS=1: first request shed %v after it; want "+
			"within %v", lsStepLight, lsStepOver, over.firstShed, lsStepFirstShed)
	}
	if over.ok == 0 || over.timeouts != 0 || over.errors != 0 || over.wrong != 0 {
		t.Errorf("the step: %d served, %d timeouts, %d errors, %d other answers; want requests served and none lost",
			over.ok, over.timeouts, over.errors, over.wrong)
	}
}
