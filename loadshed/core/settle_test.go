package core

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var testPolicy = Policy{Lower: 0.90, Upper: 0.95, CriticalLower: 0.98, CriticalUpper: 1.0}

// band is the load of an ordinary share on the default bands.
func band(share float64) float64 { return 0.90 + share*0.05 }

// queuePlant is a process fed offered times its capacity, in the units the controller works in: per reading it
// can serve one reading's worth of work; what it admits beyond that waits in a queue. Its utilisation is what it
// served, and its wait, as the wait signal reads it, is the queue's drain time over the wait target (a quarter
// of a reading, as 5 ms is of 20 ms), read over QueueWait's window (a reading being the default 20 ms).
type queuePlant struct {
	offered, queue, wait float64
}

func (p *queuePlant) step(share float64) (util, wait float64) {
	admitted := p.offered * (1 - min(share, 1))
	util = min(p.queue+admitted, 1)
	p.queue += admitted - util
	keep := math.Exp(-float64(20*time.Millisecond) / float64(queueWaitMemory))
	p.wait = keep*p.wait + (1-keep)*p.queue*4
	return util, p.wait
}

// drive runs a Settled over a plant for n readings and returns the shares and utilisations it went through.
func drive(t *testing.T, s *Settled, u, l *named, p *queuePlant, n int) (shares, utils []float64) {
	t.Helper()
	for range n {
		u.load, l.load = p.step(s.Share())
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		shares, utils = append(shares, s.Share()), append(utils, u.load)
	}
	return shares, utils
}

func newPlantSettled(t *testing.T) (*Settled, *named, *named) {
	t.Helper()
	u, l := &named{name: "cpu"}, &named{name: "wait"}
	s := NewSettled(u, l, 0)
	bindSettled(s, testPolicy)
	return s, u, l
}

func TestSettledHoldsTheQueueAtEveryOverload(t *testing.T) {
	for _, offered := range []float64{1.2, 2, 4, 10} {
		s, u, l := newPlantSettled(t)
		p := &queuePlant{offered: offered}
		shares, utils := drive(t, s, u, l, p, 300)
		want := 1 - 1/offered // the share that admits what the CPU serves
		for i := 100; i < len(shares); i++ {
			if math.Abs(shares[i]-want) > 0.03 {
				t.Fatalf("offered %v: reading %d share %.4f, want within 0.03 of %.4f (shares %.3f)", offered, i, shares[i], want, shares[90:110])
			}
			if utils[i] < 0.97 {
				t.Fatalf("offered %v: reading %d utilisation %.3f: the CPU idles while it sheds", offered, i, utils[i])
			}
		}
		if p.queue > 0.5 {
			t.Fatalf("offered %v: a queue of %.2f readings of work after settling, want about a quarter", offered, p.queue)
		}
		// When the overload ends, nothing is shed within 20 readings (0.4 s at the default Interval).
		p.offered = 0.8
		shares, _ = drive(t, s, u, l, p, 20)
		if shares[len(shares)-1] != 0 {
			t.Fatalf("offered %v: share %v 20 readings after the overload ended (%.3f)", offered, shares[len(shares)-1], shares)
		}
	}
}

func TestSettledShedsNothingBelowCapacity(t *testing.T) {
	for _, offered := range []float64{0, 0.25, 0.8, 0.95} {
		s, u, l := newPlantSettled(t)
		shares, _ := drive(t, s, u, l, &queuePlant{offered: offered}, 200)
		for i, sh := range shares {
			if sh != 0 {
				t.Fatalf("offered %v: reading %d shed %v", offered, i, sh)
			}
		}
	}
}

func TestSettledStepsOntoAnOverloadQuickly(t *testing.T) {
	// From a quarter of the capacity to three times it: the first reading that sees the queue sheds, and the
	// queue never grows past a few readings of work.
	s, u, l := newPlantSettled(t)
	p := &queuePlant{offered: 0.25}
	drive(t, s, u, l, p, 50)
	p.offered = 3
	shares, _ := drive(t, s, u, l, p, 100)
	if shares[0] == 0 && shares[1] == 0 {
		t.Fatalf("no shedding in the two readings after the step: %.3f", shares[:5])
	}
	peak := 0.0
	for range 100 {
		u.load, l.load = p.step(s.Share())
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, p.queue)
	}
	if want := 1 - 1.0/3; math.Abs(s.Share()-want) > 0.03 || peak > 1 {
		t.Fatalf("after the step: share %.3f (want %.3f), queue peak %.2f readings of work", s.Share(), want, peak)
	}
}

func TestSettledReachesTheCriticalBand(t *testing.T) {
	// A queue that keeps growing however much is shed (a process starved of all CPU) sheds every ordinary
	// request, then critical ones.
	s, u, l := newPlantSettled(t)
	u.load = 1
	var last float64
	for i := range 200 {
		l.load = float64(10 + i*10)
		load, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		last = load
	}
	if s.Share() != 2 || last != testPolicy.CriticalUpper {
		t.Fatalf("share %v, load %v; want every request shed (share 2, load %v)", s.Share(), last, testPolicy.CriticalUpper)
	}
	// Between: a share above 1 is placed on the critical band.
	s.logA = math.Log(math.Sqrt(settleMinAdmit * settleCriticalAt))
	if got := s.loadOf(s.share(), 1); math.Abs(s.share()-1.5) > 1e-9 || math.Abs(got-0.99) > 1e-9 {
		t.Fatalf("halfway into the critical range: share %v, load %v; want 1.5 and 0.99", s.share(), got)
	}
}

func TestSettledLoadOnTheBands(t *testing.T) {
	s, u, l := newPlantSettled(t)
	// Nothing shed: the load is the utilisation, up to Lower.
	for _, util := range []float64{0, 0.5, 0.95} {
		u.load, l.load = util, 0
		load, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		if want := min(util, testPolicy.Lower); load != want || s.Share() != 0 {
			t.Fatalf("util %v: load %v share %v, want %v and 0", util, load, s.Share(), want)
		}
	}
	// A share sheds through the band: its load is Lower + share × (Upper − Lower).
	s.logA = math.Log(0.6)
	if got := s.loadOf(s.share(), 0.5); math.Abs(got-band(0.4)) > 1e-9 {
		t.Fatalf("share 0.4: load %v, want %v", got, band(0.4))
	}
}

func TestSettledIgnoresWaitsItDoesNotCause(t *testing.T) {
	// An idle process beside busy neighbours: its goroutines wait long at each wake-up, but it uses almost no
	// CPU, so its own queue is nothing; a process that sleeps in its handlers has nothing runnable.
	s, u, l := newPlantSettled(t)
	for range 100 {
		u.load, l.load = 0.02, 20 // 100 ms mean waits over a 5 ms target, at 2 % of its CPU
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		if s.Share() != 0 {
			t.Fatalf("an idle process beside busy neighbours sheds %v", s.Share())
		}
	}
	// The same waits with the process using half of its CPU are its own queue: it sheds once it stands for
	// two readings.
	u.load = 0.5
	for range 2 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if s.Share() == 0 {
		t.Fatalf("a loaded process starved of CPU sheds nothing (share %v)", s.Share())
	}
}

func TestSettledLetsAOneReadingStallPass(t *testing.T) {
	// A stall that one reading sees (a quota's throttling, a GC pause) and the next does not sheds nothing;
	// the same queue for two readings in a row does.
	s, u, l := newPlantSettled(t)
	u.load = 0.8
	for i, wait := range []float64{0.2, 20, 0.3, 0.2, 15, 0.1} {
		l.load = wait
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		if s.Share() != 0 {
			t.Fatalf("reading %d (wait %v): a lone stall shed %v", i, wait, s.Share())
		}
	}
	for range 2 {
		l.load = 15
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if s.Share() == 0 {
		t.Fatal("a queue standing two readings shed nothing")
	}
}

func TestSettledWithATargetBelowOneHoldsTheCPUUnderIt(t *testing.T) {
	u, l := &named{name: "cpu"}, &named{name: "wait"}
	s := NewSettled(u, l, 0.8)
	bindSettled(s, testPolicy)
	// No queue at all, but the utilisation is above 0.8: it sheds.
	u.load, l.load = 0.95, 0
	for range 3 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if s.Share() <= 0 {
		t.Fatalf("utilisation 0.95 over a target of 0.8: share %v, want > 0", s.Share())
	}
	// Without a wait signal the utilisation alone is held, at 1 by default.
	one := NewSettled(&named{name: "cpu", load: 0.99}, nil, 0)
	if _, err := one.Load(); err != nil || one.Share() != 0 {
		t.Fatalf("utilisation 0.99, no wait signal: share %v (%v), want 0", one.Share(), err)
	}
	one.util.(*named).load = 1.5
	if _, err := one.Load(); err != nil || one.Share() == 0 {
		t.Fatalf("utilisation 1.5, no wait signal: share %v (%v), want > 0", one.Share(), err)
	}
}

func TestSettledLeavesAFailedSignalOut(t *testing.T) {
	gone := errors.New("gone")
	s, u, l := newPlantSettled(t)
	// Without the utilisation, the wait alone is the queue.
	u.err, l.load = gone, 3
	_, _ = s.Load()
	if _, err := s.Load(); err != nil || s.Share() == 0 {
		t.Fatalf("wait 3 without a utilisation: share %v (%v), want > 0", s.Share(), err)
	}
	// Without the wait, the utilisation alone, held under 1.
	u.err, u.load, l.err = nil, 0.5, gone
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	u.err = gone
	if _, err := s.Load(); !errors.Is(err, gone) {
		t.Fatalf("both signals failed: %v, want their errors", err)
	}
	u.err, u.load = nil, math.NaN()
	if _, err := s.Load(); err == nil {
		t.Fatal("a NaN utilisation with no wait must fail the reading")
	}
	lone := NewSettled(&named{name: "cpu", err: gone}, nil, 0)
	if _, err := lone.Load(); !errors.Is(err, gone) {
		t.Fatalf("Load without a wait signal = %v, want the utilisation's error", err)
	}
}

func TestSettledReadingsAndName(t *testing.T) {
	u, l := &named{name: "cpu", load: 0.4}, &named{name: "wait", load: 0.1}
	s := NewSettled(u, l, 0.8)
	if got := s.String(); got != "settled: the process's own queue (cpu times wait) held at 0.8" {
		t.Fatalf("String = %q", got)
	}
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	l.err = errors.New("late")
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	r := s.Readings()
	if len(r) != 2 || r[0] != (Reading{Signal: "cpu", Load: 0.4}) || r[1] != (Reading{Signal: "wait", Load: 0.1, Error: "late"}) {
		t.Fatalf("Readings = %+v", r)
	}
	if one := NewSettled(u, nil, 0); len(one.Signals()) != 1 || one.String() != "settled: cpu held under 1" {
		t.Fatalf("without a wait signal: %v, %d signals", one, len(one.Signals()))
	}
}

func TestNewSettledRejectsBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"nil utilisation": func() { NewSettled(nil, &named{}, 0) },
		"negative target": func() { NewSettled(&named{}, nil, -0.5) },
		"target above 2":  func() { NewSettled(&named{}, nil, 2.5) },
		"NaN target":      func() { NewSettled(&named{}, nil, math.NaN()) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "NewSettled") {
					t.Fatalf("panic %v, want one naming NewSettled", r)
				}
			}()
			f()
		})
	}
}

func TestEngineBindsAndDoesNotSmoothASettled(t *testing.T) {
	u, l := &named{name: "cpu", load: 1}, &named{name: "wait", load: 3}
	s := NewSettled(u, l, 0)
	e, _ := newTestEngine(t, Config{Signal: s, Interval: time.Hour, Smoothing: 0.2, Lower: 0.5, Upper: 0.7,
		CriticalLower: 0.8, CriticalUpper: 0.9})
	for range 3 {
		e.Sample()
	}
	st := e.Status()
	share := s.Share()
	if want := 0.5 + share*0.2; share <= 0 || share > 1 || math.Abs(st.Load-want) > 1e-9 {
		t.Fatalf("share %v, Status.Load %v; want the share on the configured band (%v), unsmoothed", share, st.Load, want)
	}
	if math.Abs(st.Probability-share) > 1e-9 {
		t.Fatalf("Probability %v, want the share %v", st.Probability, share)
	}
	if !strings.HasPrefix(st.Signal, "settled: the process's own queue (cpu times wait)") || len(st.Readings) != 2 {
		t.Fatalf("Status = %+v", st)
	}
	// Within a Combined it is bound too, and the Combined is smoothed as any signal.
	inner := NewSettled(&named{name: "cpu", load: 2}, nil, 0)
	e2, _ := newTestEngine(t, Config{Signal: Max(inner, &named{name: "other"}), Interval: time.Hour, Lower: 0.5,
		Upper: 0.7, CriticalLower: 0.8, CriticalUpper: 0.9})
	e2.Sample()
	if got, want := e2.Status().Load, 0.5+inner.Share()*0.2; math.Abs(got-want) > 1e-9 {
		t.Fatalf("combined: Load %v, want %v", got, want)
	}
}

func TestDefaultSignalHoldsTheOwnQueue(t *testing.T) {
	d := DefaultSignal(0)
	sigs := d.Signals()
	if len(sigs) != 2 || d.Target() != DefaultSettleTarget {
		t.Fatalf("DefaultSignal has %d signals, target %v", len(sigs), d.Target())
	}
	if _, ok := sigs[0].(*CPU); !ok {
		t.Fatalf("first signal %T, want *CPU", sigs[0])
	}
	if w, ok := sigs[1].(*QueueWait); !ok || w.Target() != DefaultQueueWaitTarget {
		t.Fatalf("second signal %v, want the mean wait over %v", sigs[1], DefaultQueueWaitTarget)
	}
	if _, err := d.Load(); err != nil {
		t.Fatal(err)
	}
	r := d.Readings()
	if len(r) != 2 || r[0].Reason == "" || r[1].Signal != "mean wait for a CPU over 5ms" {
		t.Fatalf("Readings = %+v; want the CPU (saying what it reads) and the mean wait", r)
	}
	// With nothing configured, the Engine uses it and says so in Status.
	e := NewEngine(Config{DisableMetrics: true}.WithDefaults(testDefaults))
	defer e.Close()
	st := e.Status()
	if !strings.HasPrefix(st.Signal, "settled: the process's own queue (CPU of ") ||
		!strings.Contains(st.Signal, "mean wait for a CPU over 5ms") || len(st.Readings) != 2 {
		t.Fatalf("Status = %+v; want the default settled signal with two readings", st)
	}
}
