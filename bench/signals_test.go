package bench

import (
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/fiberguard/fiberguard/loadshed"
)

func TestParseSignals(t *testing.T) {
	got, err := ParseSignals(" default, cpu,fixed=0.56 ,fixed=0,fixed=1,settled=0.9,settled=2")
	if err != nil || strings.Join(got, "|") != "default|cpu|fixed=0.56|fixed=0|fixed=1|settled=0.9|settled=2" {
		t.Fatalf("ParseSignals: %q, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "nope", "fixed=", "fixed=x", "fixed=-0.1", "fixed=1.01", "fixed=NaN", "fixed=Inf", "FIXED=0.5",
		"settled=", "settled=0", "settled=-1", "settled=2.5", "settled=NaN", "settled=x"} {
		if got, err := ParseSignals(bad); err == nil {
			t.Errorf("ParseSignals(%q) = %q, want an error", bad, got)
		}
	}
}

func TestFixedBand(t *testing.T) {
	for _, p := range []float64{0, 0.25, 0.56, 0.9, 1} {
		name := FixedPrefix + strconv.FormatFloat(p, 'g', -1, 64)
		cfg := FixedBand(name, loadshed.Config{DisableMetrics: true})
		if got := loadshedcore.Probability(p, cfg.Lower, cfg.Upper); math.Abs(got-p) > 1e-12 {
			t.Errorf("%s: ordinary probability %v, want %v", name, got, p)
		}
		if got := loadshedcore.Probability(p, cfg.CriticalLower, cfg.CriticalUpper); got != 0 {
			t.Errorf("%s: critical probability %v, want 0", name, got)
		}
		sig, err := Signal(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Signal = sig
		_ = loadshed.NewShedder(cfg).Close() // the bands are a valid Config: New would panic otherwise
	}
	other := loadshed.Config{Lower: 0.5, Upper: 0.7, DisableMetrics: true}
	for _, name := range []string{"default", "cpu", SettledPrefix + "0.97"} {
		got := FixedBand(name, other)
		if got.Lower != other.Lower || got.Upper != other.Upper || got.CriticalLower != 0 || got.CriticalUpper != 0 {
			t.Errorf("FixedBand(%q) changed the bands: %v %v %v %v", name, got.Lower, got.Upper, got.CriticalLower, got.CriticalUpper)
		}
	}
}

func TestSignalChoicesAreWhatParseSignalsTakes(t *testing.T) {
	// The help names every built-in and experimental signal, then the default's form and the settled form with T
	// for their target, and the fixed form with P for its load.
	choices := strings.Split(SignalChoices(), ",")
	if want := len(SignalNames) + len(ExperimentalSignals) + 4; len(choices) != want {
		t.Fatalf("SignalChoices() = %q: %d names, want %d", SignalChoices(), len(choices), want)
	}
	if tail := choices[len(choices)-4:]; !slices.Equal(tail, []string{RunQueuePrefix + "N", TargetPrefix + "T", SettledPrefix + "T", FixedPrefix + "P"}) {
		t.Fatalf("the last choices are %q", tail)
	}
	if _, err := ParseSignals(strings.Join(choices[:len(choices)-4], ",") + "," + RunQueuePrefix + "7," + TargetPrefix + "0.99," +
		SettledPrefix + "0.98," + FixedPrefix + "0.5"); err != nil {
		t.Fatalf("ParseSignals refused a listed choice: %v", err)
	}
	for _, bad := range []string{TargetPrefix + "0", TargetPrefix + "2.5", TargetPrefix + "x", TargetPrefix,
		RunQueuePrefix + "0", RunQueuePrefix + "-1", RunQueuePrefix + "+Inf", RunQueuePrefix} {
		if _, err := Signal(bad); err == nil {
			t.Errorf("Signal(%q) was accepted", bad)
		}
	}
}

// TestRunQueueSignalIsTheDefaultWithItsRunQueueTarget: runq=N is the default's Controller, its run queue's target N.
func TestRunQueueSignalIsTheDefaultWithItsRunQueueTarget(t *testing.T) {
	sig, err := Signal(RunQueuePrefix + "7")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := sig.(*loadshedcore.Controller)
	if !ok {
		t.Fatalf("Signal(runq=7) is a %T, want a *Controller", sig)
	}
	def := loadshedcore.DefaultSignal(0).String()
	if want := strings.Replace(def, "per P over 2", "per P over 7", 1); c.String() != want || want == def {
		t.Errorf("runq=7: %q, want %q", c.String(), want)
	}
}

// TestTargetSignalIsTheDefaultAtItsTarget: default=T is the default's Controller over the same signals, holding T.
func TestTargetSignalIsTheDefaultAtItsTarget(t *testing.T) {
	sig, err := Signal(TargetPrefix + "0.99")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := sig.(*loadshedcore.Controller)
	if !ok {
		t.Fatalf("Signal(default=0.99) is a %T, want a *Controller", sig)
	}
	def := loadshedcore.DefaultSignal(0)
	if c.Target() != 0.99 || c.String() != strings.Replace(def.String(), "0.97", "0.99", 1) {
		t.Errorf("default=0.99: %q (target %v); the default: %q", c.String(), c.Target(), def.String())
	}
}

func TestSettledSignalHoldsItsTarget(t *testing.T) {
	sig, err := Signal("settled=0.9")
	if err != nil {
		t.Fatal(err)
	}
	s, ok := sig.(*loadshedcore.Controller)
	if !ok || s.Target() != 0.9 {
		t.Fatalf("settled=0.9 is %v, want a Controller with target 0.9", sig)
	}
	// The default before the run queue: CPU beside scheduling latency alone.
	if sigs := s.Signals(); len(sigs) != 2 {
		t.Fatalf("settled=0.9 reads %v, want CPU and scheduling latency", sigs)
	} else if _, ok := sigs[1].(*loadshedcore.SchedLatency); !ok {
		t.Fatalf("settled=0.9's latency is %v, want scheduling latency alone", sigs[1])
	}
	if q, err := Signal("runq"); err != nil {
		t.Fatal(err)
	} else if _, ok := q.(*loadshedcore.RunQueue); !ok {
		t.Fatalf("runq is %v, want the run-queue signal", q)
	}
}

func TestFixedSignalReadsItsLoad(t *testing.T) {
	for name, want := range map[string]float64{"fixed=0": 0, "fixed=0.56": 0.56, "fixed=1": 1, "fixed=1e-9": 1e-9} {
		sig, err := Signal(name)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if got, err := sig.Load(); err != nil || got != want {
				t.Fatalf("%s read %v, %v; want %v", name, got, err, want)
			}
		}
	}
}

// TestRunDelaySignalSeesThreadsWaiting: twice as many spinning threads as CPUs wait about half the time each, so
// the run delay per P must be well above 0; the combined signal reads at least as much as its run-delay part.
func TestRunDelaySignalSeesThreadsWaiting(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task here: the run-delay signal reads Linux's per-thread schedstat")
	}
	sig, err := Signal("rundelay")
	if err != nil {
		t.Fatal(err)
	}
	if load, err := sig.Load(); err != nil || load != 0 {
		t.Fatalf("the first reading is the baseline: %v, %v", load, err)
	}
	n := 2 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread() // one thread each, so the kernel, not Go, shares the CPUs
			defer runtime.UnlockOSThread()
			for !stop.Load() {
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	load, err := sig.Load()
	stop.Store(true)
	wg.Wait()
	t.Logf("%d spinning threads on %d CPUs: run delay %.2f per P", n, runtime.NumCPU(), load)
	if err != nil || load < 0.25 {
		t.Fatalf("%d spinning threads on %d CPUs: run delay %v per P (%v), want at least 0.25", n, runtime.NumCPU(), load, err)
	}
}
