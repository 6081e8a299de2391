package core

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"
)

func TestCPULoad(t *testing.T) {
	tests := []struct {
		name          string
		used, elapsed time.Duration
		capacity      float64
		want          float64
		bad           bool
	}{
		{"idle", 0, time.Second, 1, 0, false},
		{"half of one CPU", 500 * time.Millisecond, time.Second, 1, 0.5, false},
		{"saturated half-CPU quota", 50 * time.Millisecond, 100 * time.Millisecond, 0.5, 1, false},
		{"quarter of two CPUs", 250 * time.Millisecond, 500 * time.Millisecond, 2, 0.25, false},
		{"above capacity is reported as is", 300 * time.Millisecond, 100 * time.Millisecond, 2, 1.5, false},
		{"no time elapsed", time.Millisecond, 0, 1, 0, true},
		{"counter went backwards", -time.Millisecond, time.Second, 1, 0, true},
		{"no capacity", time.Millisecond, time.Second, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cpuLoad(tt.used, tt.elapsed, tt.capacity)
			if (err != nil) != tt.bad || math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("cpuLoad = %v, %v; want %v (error %v)", got, err, tt.want, tt.bad)
			}
		})
	}
}

// fakeClock drives a CPU signal: each usage read and each sleep advance it as scripted.
type fakeClock struct {
	now   time.Time
	usage time.Duration
}

func TestCPUSignalMeasuresEachInterval(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	var readErr error
	c := &CPU{
		capacity: 0.5,
		usage:    func() (time.Duration, error) { return clk.usage, readErr },
		now:      func() time.Time { return clk.now },
		sleep: func(d time.Duration) {
			// While priming, the group burns its whole half-CPU quota.
			clk.now = clk.now.Add(d)
			clk.usage += d / 2
		},
	}
	// First call: primes over its own window and reports a saturated quota.
	if got, err := c.Load(); err != nil || math.Abs(got-1) > 1e-9 {
		t.Fatalf("first Load = %v, %v; want 1", got, err)
	}
	// Next interval: 100 ms of wall time, 10 ms of CPU on a 0.5 CPU quota = 0.2.
	clk.now = clk.now.Add(100 * time.Millisecond)
	clk.usage += 10 * time.Millisecond
	if got, err := c.Load(); err != nil || math.Abs(got-0.2) > 1e-9 {
		t.Fatalf("second Load = %v, %v; want 0.2", got, err)
	}
	// A failing read is reported, and the next good one measures from the last good reading.
	readErr = errors.New("gone")
	if _, err := c.Load(); err == nil {
		t.Fatal("Load hid a read error")
	}
	readErr = nil
	clk.now = clk.now.Add(200 * time.Millisecond)
	clk.usage += 100 * time.Millisecond
	if got, err := c.Load(); err != nil || math.Abs(got-1) > 1e-9 {
		t.Fatalf("Load after an error = %v, %v; want 1", got, err)
	}
}

func TestCPUSignalMinimumWindow(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c := &CPU{
		capacity:  1,
		minWindow: 100 * time.Millisecond,
		usage:     func() (time.Duration, error) { return clk.usage, nil },
		now:       func() time.Time { return clk.now },
		sleep:     func(d time.Duration) { clk.now = clk.now.Add(d) }, // idle while priming
	}
	if got, _ := c.Load(); got != 0 {
		t.Fatalf("first Load = %v, want 0", got)
	}
	// 20 ms later, fully busy: too short a window, the last measurement is repeated.
	clk.now = clk.now.Add(20 * time.Millisecond)
	clk.usage += 20 * time.Millisecond
	if got, _ := c.Load(); got != 0 {
		t.Fatalf("Load within the minimum window = %v, want the last (0)", got)
	}
	// 100 ms after the last measurement, the whole window is measured: 20 ms busy + 80 ms busy = 1.
	clk.now = clk.now.Add(80 * time.Millisecond)
	clk.usage += 80 * time.Millisecond
	if got, _ := c.Load(); math.Abs(got-1) > 1e-9 {
		t.Fatalf("Load after the window = %v, want 1", got)
	}
}

func TestNewCPUOnThisMachine(t *testing.T) {
	c := NewCPU(0)
	if c.Capacity() <= 0 || c.Source() == "" || c.Reason() == "" {
		t.Fatalf("NewCPU: source %q capacity %v reason %q", c.Source(), c.Capacity(), c.Reason())
	}
	load, err := c.Load()
	if err != nil || load < 0 || math.IsNaN(load) {
		t.Fatalf("Load = %v, %v", load, err)
	}
	t.Logf("CPU signal: %s, %.3g CPUs (%s), first load %.3f", c.Source(), c.Capacity(), c.Reason(), load)
}

// A sampler descheduled next to a read of the counter, before or after it, while the process's other threads
// use half a CPU: no interval reads more than that half CPU, where pairing the count with the clock read after a
// stall would read 1.5.
func TestCPUSignalSurvivesAStalledSampler(t *testing.T) {
	for _, where := range []string{"before", "after"} {
		t.Run("stalled "+where+" the read", func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1000, 0)}
			stall := time.Duration(0)
			wait := func() { clk.now = clk.now.Add(stall); clk.usage += stall / 2; stall = 0 }
			c := &CPU{
				capacity: 1,
				usage: func() (time.Duration, error) {
					if where == "before" {
						wait()
						return clk.usage, nil
					}
					v := clk.usage
					wait()
					return v, nil
				},
				now:   func() time.Time { return clk.now },
				sleep: func(d time.Duration) { clk.now = clk.now.Add(d); clk.usage += d / 2 },
			}
			if got, _ := c.Load(); math.Abs(got-0.5) > 1e-9 {
				t.Fatalf("first Load = %v, want 0.5", got)
			}
			for _, s := range []time.Duration{40 * time.Millisecond, 0, 0, 0} {
				clk.now = clk.now.Add(20 * time.Millisecond)
				clk.usage += 10 * time.Millisecond
				stall = s
				got, err := c.Load()
				if err != nil || got < 0 || got > 0.5+1e-9 {
					t.Fatalf("Load with a %v stall = %v, %v; want at most the half CPU used", s, got, err)
				}
			}
		})
	}
}

// A group allows more CPUs than GOMAXPROCS: the process's own CPU time over GOMAXPROCS tells when it cannot do
// more, though the group's usage is half of its limit.
func TestCPUGroupBeyondGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	clk := &fakeClock{now: time.Unix(1000, 0)}
	var group, own time.Duration
	c := &CPU{
		capacity: 2,
		usage:    func() (time.Duration, error) { return group, nil },
		own:      func() (time.Duration, error) { return own, nil },
		now:      func() time.Time { return clk.now },
		sleep:    func(d time.Duration) { clk.now = clk.now.Add(d) },
	}
	if _, err := c.Load(); err != nil {
		t.Fatal(err)
	}
	if got := c.Capacity(); got != 1 {
		t.Fatalf("Capacity at GOMAXPROCS=1 in a 2-CPU group = %v, want 1", got)
	}
	step := func(groupUsed, ownUsed time.Duration) float64 {
		t.Helper()
		clk.now = clk.now.Add(100 * time.Millisecond)
		group, own = group+groupUsed, own+ownUsed
		load, err := c.Load()
		if err != nil {
			t.Fatal(err)
		}
		return load
	}
	// The process uses its one P fully: the group is at half of its limit, the process at its ceiling.
	if got := step(100*time.Millisecond, 95*time.Millisecond); math.Abs(got-0.95) > 1e-9 {
		t.Fatalf("own CPU at 0.95 of GOMAXPROCS: load %v, want 0.95", got)
	}
	// Others in the group spend it: the group's own share binds.
	if got := step(190*time.Millisecond, 20*time.Millisecond); math.Abs(got-0.95) > 1e-9 {
		t.Fatalf("group at 0.95 of its limit: load %v, want 0.95", got)
	}
	// With GOMAXPROCS at the limit, the process's own time is not read into the load.
	runtime.GOMAXPROCS(2)
	if got := c.Capacity(); got != 2 {
		t.Fatalf("Capacity at GOMAXPROCS=2 = %v, want 2", got)
	}
	if got := step(100*time.Millisecond, 100*time.Millisecond); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("GOMAXPROCS=2, group at half: load %v, want 0.5", got)
	}
}
