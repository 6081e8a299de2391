package core

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// step is one reading of a Controller's two signals and what the Controller must make of it.
type step struct {
	util, lat float64
	utilErr   error
	latErr    error
	wantShare float64
	wantLoad  float64
	wantErr   bool
}

// runSteps feeds steps to a Controller over two named signals, bound to the adapters' default bands.
func runSteps(t *testing.T, steps []step) {
	t.Helper()
	u, l := &named{name: "cpu"}, &named{name: "lat"}
	s := NewController(u, l, 0)
	bindController(s, testPolicy)
	for i, st := range steps {
		u.load, u.err, l.load, l.err = st.util, st.utilErr, st.lat, st.latErr
		got, err := s.Load()
		if (err != nil) != st.wantErr {
			t.Fatalf("step %d: Load error %v, want error %v", i, err, st.wantErr)
		}
		if st.wantErr {
			continue
		}
		if math.Abs(s.Share()-st.wantShare) > 1e-9 || math.Abs(got-st.wantLoad) > 1e-9 {
			t.Fatalf("step %d (util %v, lat %v): share %v load %v; want share %v load %v",
				i, st.util, st.lat, s.Share(), got, st.wantShare, st.wantLoad)
		}
	}
}

var testPolicy = Policy{Lower: 0.90, Upper: 0.95, CriticalLower: 0.98, CriticalUpper: 1.0}

// band is the load of an ordinary share on the default bands.
func band(share float64) float64 { return 0.90 + share*0.05 }

// shareAfter is the share shed after errors es from none: the admitted share multiplied by exp(-Gain × e) for
// each, at most 1.
func shareAfter(es ...float64) float64 {
	admit := 1.0
	for _, e := range es {
		admit = min(admit*math.Exp(-settleGain*e), 1)
	}
	return 1 - admit
}

func TestSettledMovesTheShareByTheUtilisation(t *testing.T) {
	T := DefaultControlTarget
	up, down := 0.2, -0.1 // the errors of a utilisation at 1.2 and 0.9 of Target
	runSteps(t, []step{
		// Below Target nothing is shed and the load is the reading itself, up to Lower.
		{util: 0.5, wantShare: 0, wantLoad: 0.5},
		{util: 0.93, wantShare: 0, wantLoad: 0.90},
		// Above Target the admitted share shrinks by the relative excess...
		{util: T * 1.2, wantShare: shareAfter(up), wantLoad: band(shareAfter(up))},
		// ...and grows back by the relative shortfall, never past admitting everything.
		{util: T * 0.9, wantShare: shareAfter(up, down), wantLoad: band(shareAfter(up, down))},
		{util: 0.2, wantShare: 0, wantLoad: 0.2},
	})
}

func TestSettledMovesByTheSameFractionAtAnyShare(t *testing.T) {
	// The same error takes the same fraction of what is admitted, whether most requests are admitted or few:
	// the step is as gentle at 10x the capacity as at 1.2x.
	s := NewController(&named{name: "cpu", load: 2}, nil, 0)
	var admitted []float64
	for range 40 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		admitted = append(admitted, 1-s.Share())
	}
	for i := 1; i < len(admitted); i++ {
		if r := admitted[i] / admitted[i-1]; math.Abs(r-math.Exp(-settleGain)) > 1e-9 {
			t.Fatalf("reading %d: admitted %v after %v (ratio %v), want the ratio exp(-Gain) = %v",
				i, admitted[i], admitted[i-1], r, math.Exp(-settleGain))
		}
	}
}

// throttling is a utilisation signal of a group with a quota that tells whether the quota stopped it.
type throttling struct {
	named
	throttled bool
}

func (t *throttling) Throttled() bool { return t.throttled }

func TestSettledCountsALastingQueueUnlessAQuotaStoppedTheProcess(t *testing.T) {
	T := DefaultControlTarget
	u, l := &throttling{named: named{name: "cpu"}}, &named{name: "lat"}
	s := NewController(u, l, 0)
	bindController(s, testPolicy)
	steps := []struct {
		util, lat float64
		throttled bool
		want      float64
	}{
		// The quota throttled the process, and it used less than Target: its goroutines queue on the wake-up to
		// what arrived while it was stopped, a burst that shedding more would not shorten. Nothing is shed.
		{0.5, 2, true, 0},
		{0.5, 2, true, 0},
		// At Target the same queue is the CPU's own: its excess over 1 is the error.
		{T, 1.5, true, shareAfter(0.5)},
		// A lone queue is not: a reading without one, then one with one, moves the share by the utilisation only.
		{T, 0.5, false, shareAfter(0.5, 0)},
		{T, 3, false, shareAfter(0.5, 0, 0)},
		// The error is capped at 1: a latency of 3 moves it as one of 2 does.
		{T, 3, false, shareAfter(0.5, 0, 0, 1)},
		// Below Target without throttling, a queue that lasts is a process that gets less CPU than it may use
		// (neighbours take it): the queue's excess moves the share.
		{0.5, 2, false, shareAfter(0.5, 0, 0, 1, 1)},
		// It comes back by the utilisation's shortfall once the queue is gone.
		{0.5, 0.5, false, shareAfter(0.5, 0, 0, 1, 1, 0.5/T-1)},
	}
	for i, st := range steps {
		u.load, u.throttled, l.load = st.util, st.throttled, st.lat
		got, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.Share()-st.want) > 1e-9 || math.Abs(got-band(st.want)) > 1e-9 {
			t.Fatalf("step %d (util %v, lat %v, throttled %v): share %v load %v; want share %v load %v",
				i, st.util, st.lat, st.throttled, s.Share(), got, st.want, band(st.want))
		}
	}
}

func TestSettledReachesTheCriticalBand(t *testing.T) {
	// A utilisation that stays far above Target sheds every ordinary request, then moves on to critical ones.
	u := &named{name: "cpu", load: 2}
	s := NewController(u, nil, 0)
	bindController(s, testPolicy)
	readings := 0
	for ; s.Share() < 2 && readings < 100; readings++ {
		load, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		if share := s.Share(); share > 1 && math.Abs(load-(0.98+(share-1)*0.02)) > 1e-9 {
			t.Fatalf("share %v read as load %v, want it on the critical band", share, load)
		}
	}
	// From 1 to 0.01 admitted at exp(-Gain) a reading, then 1/Gain readings through the critical band.
	if want := int(math.Ceil(math.Log(1/settleFloor)/settleGain)) + int(1/settleGain); readings > want+1 {
		t.Fatalf("%d readings to shed everything at twice the CPU, want about %d", readings, want)
	}
	if load, _ := s.Load(); load != 1.0 || s.Share() != 2 {
		t.Fatalf("at the top: share %v load %v, want 2 and 1.0", s.Share(), load)
	}
	// Relief brings the critical requests back first: ordinary ones stay shed until no critical one is.
	u.load = 0.5
	for s.Share() > 1 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if share := s.Share(); share != 1 {
		t.Fatalf("after the critical share came down: share %v, want 1 (ordinary requests still shed)", share)
	}
	if _, err := s.Load(); err != nil || s.Share() >= 1 {
		t.Fatalf("next reading: share %v (%v), want ordinary requests admitted again", s.Share(), err)
	}
}

func TestSettledLeavesAFailedSignalOut(t *testing.T) {
	gone := errors.New("gone")
	T := DefaultControlTarget
	runSteps(t, []step{
		// Without the utilisation, the latency stands in for it: its excess over 1 is the error.
		{utilErr: gone, lat: 1.5, wantShare: shareAfter(0.5), wantLoad: band(shareAfter(0.5))},
		// Without the latency, the utilisation alone moves the share.
		{util: 0.8, latErr: gone, wantShare: shareAfter(0.5, 0.8/T-1), wantLoad: band(shareAfter(0.5, 0.8/T-1))},
		{utilErr: gone, latErr: gone, wantErr: true},
		{util: math.NaN(), latErr: gone, wantErr: true},
	})
	s := NewController(&named{name: "cpu", err: gone}, nil, 0)
	if _, err := s.Load(); !errors.Is(err, gone) {
		t.Fatalf("Load without a latency signal = %v, want the utilisation's error", err)
	}
}

func TestSettledReadingsAndName(t *testing.T) {
	u, l := &named{name: "cpu", load: 0.4}, &named{name: "lat", load: 0.1}
	s := NewController(u, l, 0.8)
	if got := s.String(); got != "settled at 0.8 of cpu, beside lat" {
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
	if len(r) != 2 || r[0] != (Reading{Signal: "cpu", Load: 0.4}) || r[1] != (Reading{Signal: "lat", Load: 0.1, Error: "late"}) {
		t.Fatalf("Readings = %+v", r)
	}
	if one := NewController(u, nil, 0); len(one.Signals()) != 1 || one.String() != "settled at 0.97 of cpu" {
		t.Fatalf("without latency: %v, %d signals", one, len(one.Signals()))
	}
}

func TestNewSettledRejectsBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"nil utilisation": func() { NewController(nil, &named{}, 0) },
		"negative target": func() { NewController(&named{}, nil, -0.5) },
		"target above 2":  func() { NewController(&named{}, nil, 2.5) },
		"NaN target":      func() { NewController(&named{}, nil, math.NaN()) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "NewController") {
					t.Fatalf("panic %v, want one naming NewController", r)
				}
			}()
			f()
		})
	}
}

// plant is a process fed offered times its capacity: what it admits and what it has left over from before use
// util = backlog + admitted (capped at maxUtil, the most it can use: above 1 a quota it overspends before being
// throttled, 1 where GOMAXPROCS binds), and beyond its capacity a backlog builds, read as a latency of
// backlog/0.2.
type plant struct {
	offered, maxUtil, backlog float64
}

func (p *plant) step(share float64) (util, lat float64) {
	admitted := p.offered * (1 - min(share, 1))
	util = min(p.backlog+admitted, p.maxUtil)
	p.backlog = max(p.backlog+admitted-1, 0)
	return util, min(p.backlog/0.2, 2)
}

func TestSettledSettlesOnTheShareThatFits(t *testing.T) {
	for _, maxUtil := range []float64{1.6, 1} {
		for _, offered := range []float64{1.2, 2, 4, 10} {
			u, l := &named{name: "cpu"}, &named{name: "lat"}
			s := NewController(u, l, 0)
			bindController(s, testPolicy)
			p := &plant{offered: offered, maxUtil: maxUtil}
			var shares []float64
			for range 400 {
				u.load, l.load = p.step(s.Share())
				if _, err := s.Load(); err != nil {
					t.Fatal(err)
				}
				shares = append(shares, s.Share())
			}
			want := 1 - DefaultControlTarget/offered // the share that holds the process at Target
			for i, got := range shares[200:] {
				if math.Abs(got-want) > 0.02 {
					t.Fatalf("max %v offered %v: reading %d share %.4f, want within 0.02 of %.4f", maxUtil, offered, 200+i, got, want)
				}
			}
			if p.backlog > 0.05 {
				t.Fatalf("max %v offered %v: backlog %v left after settling", maxUtil, offered, p.backlog)
			}
			// When the overload ends (0.8 of capacity offered), the share comes down within 60 readings, and the
			// load is the reading again.
			p.offered = 0.8
			for i := range 60 {
				u.load, l.load = p.step(s.Share())
				load, err := s.Load()
				if err != nil {
					t.Fatal(err)
				}
				if s.Share() == 0 {
					if load >= testPolicy.Lower {
						t.Fatalf("offered %v: share 0 but load %v, want the reading below Lower", offered, load)
					}
					break
				}
				if i == 59 {
					t.Fatalf("max %v offered %v: share %v after 60 readings at 0.8 of capacity, want 0", maxUtil, offered, s.Share())
				}
			}
		}
	}
}

// limitAfter feeds a Controller one reading (utilisation util, latency lat) and then the engine's count of requests
// in flight and those the limit rejected since the last reading, and returns the limit it sets.
func limitAfter(t *testing.T, s *Controller, u, l *named, util, lat float64, inFlight int64, gated uint64) int64 {
	t.Helper()
	u.load, l.load = util, lat
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return s.nextLimit(inFlight, gated)
}

func TestSettledLimitFollowsTheQueue(t *testing.T) {
	u, l := &named{name: "cpu"}, &named{name: "lat"}
	s := NewController(u, l, 0)
	for i, c := range []struct {
		util, lat float64
		inFlight  int64
		gated     uint64
		want      int64
	}{
		{0.5, 0, 40, 0, 0},                   // no queue: no limit, however many are in flight
		{1, 1, 40, 0, 20},                    // a queue: half of what is in flight
		{1, 2, 30, 5, 10},                    // another: half of the limit (fewer than in flight)
		{1, 1.5, 8, 9, 4},                    // half of the fewer in flight
		{1, 1, 1, 9, 1},                      // never below one CPU's worth
		{0.5, 0, 1, 3, 2},                    // it rejected while the CPU had room and no queue: up by one at least
		{0.5, 0, 2, 3, 3},                    // ...
		{0.5, 0, 3, 3, 4},                    // ...
		{0.5, 0, 4, 3, 5},                    // ...
		{0.5, 0, 5, 3, 6},                    // by a quarter once that is more than one
		{DefaultControlTarget, 0.5, 6, 3, 6}, // at Target it holds: the CPU has no room for more
		{0.5, 0.9, 6, 0, 0},                  // it rejected nothing: lifted
	} {
		if got := limitAfter(t, s, u, l, c.util, c.lat, c.inFlight, c.gated); got != c.want {
			t.Fatalf("step %d (%+v): limit %d, want %d", i, c, got, c.want)
		}
		if s.Limit() != c.want {
			t.Fatalf("step %d: Limit() = %d, want %d", i, s.Limit(), c.want)
		}
	}
	// The limit grows by a quarter of itself once that is more than one.
	s.limit = 40
	if got := limitAfter(t, s, u, l, 0.5, 0, 40, 1); got != 50 {
		t.Fatalf("from 40: limit %d, want 50", got)
	}
}

func TestSettledLimitNeedsALatency(t *testing.T) {
	u := &named{name: "cpu", load: 2}
	s := NewController(u, nil, 0)
	for range 3 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		if got := s.nextLimit(100, 10); got != 0 {
			t.Fatalf("without a latency signal: limit %d, want none", got)
		}
	}
}

func TestSettledLimitKeepsTheCPUsBusy(t *testing.T) {
	// Over a CPU signal the lowest limit is the CPUs the process may use, rounded up: halving further would leave
	// one idle.
	c := &CPU{capacity: 1.5, usage: func() (time.Duration, error) { return 0, nil }, now: time.Now, sleep: func(time.Duration) {}}
	l := &named{name: "lat", load: 2}
	s := NewController(c, l, 0)
	want := int64(min(2, runtime.GOMAXPROCS(0)))
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if got := s.nextLimit(1, 0); got != want {
		t.Fatalf("limit %d, want %d (1.5 CPUs rounded up, at most GOMAXPROCS)", got, want)
	}
}

func TestEngineBindsAndDoesNotSmoothASettled(t *testing.T) {
	u := &named{name: "cpu", load: DefaultControlTarget + 0.5}
	s := NewController(u, nil, 0)
	e, _ := newTestEngine(t, testConfig{Signal: s, Interval: time.Hour, Smoothing: 0.2, Lower: 0.5, Upper: 0.7,
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
	if !strings.HasPrefix(st.Signal, "settled at 0.97 of cpu") || len(st.Readings) != 1 || st.Readings[0].Load != u.load {
		t.Fatalf("Status = %+v", st)
	}
	// Within a Max it is bound too, and the Max is smoothed as any signal.
	inner := NewController(&named{name: "cpu", load: 2}, nil, 0)
	e2, _ := newTestEngine(t, testConfig{Signal: NewMax(inner, &named{name: "other"}), Interval: time.Hour, Lower: 0.5,
		Upper: 0.7, CriticalLower: 0.8, CriticalUpper: 0.9})
	e2.Sample()
	if got, want := e2.Status().Load, 0.5+inner.Share()*0.2; math.Abs(got-want) > 1e-9 {
		t.Fatalf("combined: Load %v, want %v", got, want)
	}
}

func TestDefaultSignalSettlesCPUBesideLatencyAndRunQueue(t *testing.T) {
	d := DefaultSignal(0)
	sigs := d.Signals()
	if len(sigs) != 2 || d.Target() != DefaultControlTarget {
		t.Fatalf("DefaultSignal has %d signals, target %v", len(sigs), d.Target())
	}
	if _, ok := sigs[0].(*CPU); !ok {
		t.Fatalf("first signal %T, want *CPU", sigs[0])
	}
	lat, ok := sigs[1].(*Max)
	if !ok || len(lat.Signals()) != 2 {
		t.Fatalf("second signal %v, want the highest of scheduling latency and the run queue", sigs[1])
	}
	if s, ok := lat.Signals()[0].(*SchedLatency); !ok || s.Target() != DefaultSchedTarget {
		t.Fatalf("latency's first signal %v, want scheduling latency over %v", lat.Signals()[0], DefaultSchedTarget)
	}
	if q, ok := lat.Signals()[1].(*RunQueue); !ok || q.Target() != DefaultRunQueueTarget || q.admitted != &d.admitted {
		t.Fatalf("latency's second signal %v, want the run queue over %v", lat.Signals()[1], DefaultRunQueueTarget)
	}
	if _, err := d.Load(); err != nil {
		t.Fatal(err)
	}
	r := d.Readings()
	if len(r) != 3 || r[0].Reason == "" || r[1].Signal != lat.Signals()[0].(fmt.Stringer).String() ||
		r[2].Signal != "runnable goroutines per P over 2" {
		t.Fatalf("Readings = %+v; want the CPU (saying what it reads), the scheduling latency and the run queue", r)
	}
	// With nothing configured, the Engine uses it and says so in Status.
	e := NewEngine(testConfig{DisableMetrics: true}.WithDefaults(testDefaults), nil)
	defer e.Close()
	st := e.Status()
	if !strings.HasPrefix(st.Signal, "settled at 0.97 of CPU of ") || !strings.Contains(st.Signal, "scheduler latency") ||
		!strings.Contains(st.Signal, "runnable goroutines") || len(st.Readings) != 3 {
		t.Fatalf("Status = %+v; want the default settled signal with three readings", st)
	}
	// Config.Target is the default signal's target.
	e2 := NewEngine(testConfig{DisableMetrics: true, Target: 0.8}.WithDefaults(testDefaults), nil)
	defer e2.Close()
	if st := e2.Status(); !strings.HasPrefix(st.Signal, "settled at 0.8 of CPU of ") {
		t.Fatalf("Target 0.8: Status.Signal %q, want the default signal settled at 0.8", st.Signal)
	}
}

// arrivals is a process whose Ps are its only limit (GOMAXPROCS at its CPUs): offered times its capacity
// arrives, every arrival is a runnable goroutine until it is read, so its run queue holds offered goroutines per P
// whatever it sheds, and it uses what it admits, up to all of its CPU.
type arrivals struct{ offered float64 }

func (p arrivals) util(share float64) float64 { return min(p.offered*(1-min(share, 1)), 1) }

// runnable is the run queue's reading on one P: offered times the default target.
func (p arrivals) runnable() (uint64, bool) {
	return uint64(math.Round(p.offered * DefaultRunQueueTarget)), true
}

// decide tells s the decisions of one reading's arrivals at its share (10^12 of them, so that the share admitted
// is exact to within 1e-12).
func decide(s *Controller, share float64) {
	const n = 1e12
	admitted := uint64(math.Round(n * (1 - min(share, 1))))
	s.observe(admitted, n-admitted, 0, 0)
}

func TestControllerCountsTheRunQueueByTheShareItAdmits(t *testing.T) {
	for _, offered := range []float64{1.5, 2, 4, 10} {
		p := arrivals{offered: offered}
		u := &named{name: "cpu"}
		q := newRunQueue(0, p.runnable, func() int { return 1 }, ticker(20*time.Millisecond))
		s := NewController(u, NewMax(&named{name: "sched"}, q), 0)
		bindController(s, testPolicy)
		for range 400 {
			u.load = p.util(s.Share())
			decide(s, s.Share())
			if _, err := s.Load(); err != nil {
				t.Fatal(err)
			}
		}
		// The share that holds the CPU at Target: the queue of the requests it rejects does not raise it.
		want := 1 - DefaultControlTarget/offered
		if got := s.Share(); math.Abs(got-want) > 0.02 {
			t.Fatalf("offered %v: share %.4f, want within 0.02 of %.4f (the CPU at Target)", offered, got, want)
		}
		if got, err := q.Load(); err != nil || got >= 1 {
			t.Fatalf("offered %v: run queue load %v, %v; want the share it admits under 1", offered, got, err)
		}
	}
	// The same queue read by a latency signal that is not a run queue (a wait every request has) is counted in
	// full: the share rises well above what holds the CPU at Target.
	p := arrivals{offered: 4}
	u, l := &named{name: "cpu"}, &named{name: "lat"}
	s := NewController(u, l, 0)
	bindController(s, testPolicy)
	r, _ := p.runnable()
	l.load = float64(r) / DefaultRunQueueTarget
	for range 400 {
		u.load = p.util(s.Share())
		decide(s, s.Share())
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if floor := 1 - DefaultControlTarget/4; s.Share() < floor+0.1 {
		t.Fatalf("a wait counted in full: share %.4f, want well above %.4f", s.Share(), floor)
	}
}

func TestControllerCountsARunQueueOfItsOwnByTheShareItAdmits(t *testing.T) {
	// A run queue that is the whole latency signal, 4 goroutines on one P over a target of 2 (load 2), with the
	// CPU at Target: the first queue is a lone one (0), then the queue counts by the share admitted: in full at
	// first, then less as the share shed grows, which stops under one half (2 × admitted = 1).
	u := &named{name: "cpu", load: DefaultControlTarget}
	q := newRunQueue(0, func() (uint64, bool) { return 4, true }, func() int { return 1 }, ticker(20*time.Millisecond))
	s := NewController(u, q, 0)
	bindController(s, testPolicy)
	var errs []float64
	for i := range 12 {
		before := s.Share()
		decide(s, before)
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		// The reading is the queue by the share admitted since the previous one.
		if got, want := s.Readings()[1].Load, 2*(1-before); i >= 1 && math.Abs(got-want) > 1e-6 {
			t.Fatalf("reading %d: run queue reads %v, want %v", i, got, want)
		}
		if i >= 2 { // the queue is seen at reading 1 and lasts from reading 2
			errs = append(errs, min(2*(1-before)-1, 1))
		}
		if got, want := s.Share(), shareAfter(errs...); math.Abs(got-want) > 1e-9 {
			t.Fatalf("reading %d: share %v, want %v", i, got, want)
		}
	}
	if got := s.Share(); got <= 0.3 || got > 0.5 {
		t.Fatalf("share %v, want it to approach one half from below", got)
	}
	// A run queue no Controller owns counts every goroutine.
	alone := newRunQueue(0, func() (uint64, bool) { return 4, true }, func() int { return 1 }, ticker(20*time.Millisecond))
	for range 2 {
		if got, err := alone.Load(); err == nil && got == 2 {
			return
		}
	}
	t.Fatal("a run queue of its own does not read 2 for 4 goroutines on one P over a target of 2")
}

func TestControllerCountsTheRunQueueInFullWithoutRequests(t *testing.T) {
	// Goroutines that are not requests queue (4 on one P over a target of 2) while no request arrives: nothing
	// rejected is among them, so the queue counts in full after any share, and the share goes to every ordinary
	// request as fast as the error allows.
	u := &named{name: "cpu", load: DefaultControlTarget}
	q := newRunQueue(0, func() (uint64, bool) { return 4, true }, func() int { return 1 }, ticker(20*time.Millisecond))
	s := NewController(u, q, 0)
	bindController(s, testPolicy)
	var errs []float64
	for i := range 40 {
		s.observe(0, 0, 0, 0)
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		if got := s.Readings()[1].Load; i >= 1 && got != 2 {
			t.Fatalf("reading %d: run queue reads %v with no request decided, want 2 (in full)", i, got)
		}
		if i >= 2 {
			errs = append(errs, 1)
		}
	}
	if got, want := s.Share(), shareAfter(errs...); math.Abs(got-want) > 1e-9 || got < 0.95 {
		t.Fatalf("share %v, want %v: every ordinary request", got, want)
	}
	// Requests that were all admitted count in full too; all rejected, not at all.
	for _, c := range []struct {
		admitted, rejected uint64
		want               float64
	}{{10, 0, 2}, {0, 10, 0}, {1, 3, 0.5}, {math.MaxUint64 / 2, math.MaxUint64 / 2, 1}} {
		s.observe(c.admitted, c.rejected, 0, 0)
		if got, err := q.Load(); err != nil || math.Abs(got-c.want) > 1e-9 {
			t.Fatalf("%d admitted, %d rejected: run queue reads %v, %v; want %v", c.admitted, c.rejected, got, err, c.want)
		}
	}
}

func TestControllerAllowsTheWaitBehindOneRequest(t *testing.T) {
	// One CPU, 18 ms of it used in every 20 ms reading (0.9) by requests that finish 3 a reading: 6 ms each.
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	var used time.Duration
	c := &CPU{capacity: 1, usage: func() (time.Duration, error) { return used, nil }, now: clock, sleep: func(time.Duration) {}}
	// Every goroutine that runs waited 8 ms: the p90 is in the 8 ms bucket, over a target of 7 ms alone.
	cum := make([]uint64, len(testBuckets)-1)
	l := newSchedLatency(DefaultSchedTarget, testBuckets, func(dst []uint64) { copy(dst, cum) }, clock)
	s := NewController(c, l, 0)
	bindController(s, testPolicy)
	read := func(finished uint64, work time.Duration) float64 {
		t.Helper()
		now = now.Add(20 * time.Millisecond)
		used += time.Duration(finished) * work
		cum[3] += 100
		s.observe(0, 0, finished, 20*time.Millisecond)
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		return s.Readings()[1].Load
	}
	read(3, 6*time.Millisecond) // the baselines
	if got := read(3, 6*time.Millisecond); math.Abs(s.Work().Seconds()-0.006) > 1e-6 || math.Abs(got-8.0/13) > 1e-6 {
		t.Fatalf("6 ms requests: work %v, scheduling latency %v; want 6ms and 8 ms over 7+6 ms", s.Work(), got)
	}
	if s.Share() != 0 {
		t.Fatalf("share %v after waits behind one request at 0.9 of the CPU, want 0", s.Share())
	}
	// A reading in which nothing finished teaches nothing; the average then follows new requests by a quarter.
	read(0, 0)
	if got := s.Work(); got != 6*time.Millisecond {
		t.Fatalf("work %v after a reading with nothing finished, want 6ms kept", got)
	}
	read(1, 18*time.Millisecond)
	if got, want := s.Work(), 6*time.Millisecond+3*time.Millisecond; got < want-time.Microsecond || got > want+time.Microsecond {
		t.Fatalf("work %v after an 18 ms request, want %v", got, want)
	}
	// Long requests are preempted after the scheduler's slice: at most 10 ms is allowed.
	for range 40 {
		read(1, 18*time.Millisecond)
	}
	if got := read(1, 18*time.Millisecond); math.Abs(got-8.0/17) > 1e-6 {
		t.Fatalf("18 ms requests: scheduling latency %v, want 8 ms over 7+10 ms", got)
	}
	// A scheduling latency no Controller owns, or a Controller over another utilisation, holds its target alone.
	alone := newSchedLatency(DefaultSchedTarget, testBuckets, func(dst []uint64) { copy(dst, cum) }, clock)
	alone.Load()
	now = now.Add(20 * time.Millisecond)
	cum[3] += 100
	if got, _ := alone.Load(); math.Abs(got-8.0/7) > 1e-6 {
		t.Fatalf("alone: %v, want 8 ms over 7 ms", got)
	}
	other := NewController(&named{name: "cpu", load: 0.9}, NewSchedLatency(0), 0)
	other.observe(0, 0, 3, 20*time.Millisecond)
	if _, err := other.Load(); err != nil || other.Work() != 0 {
		t.Fatalf("a Controller over another utilisation learned work %v (%v), want 0", other.Work(), err)
	}
}

// overloaded is a Controller over a throttling utilisation and a latency that has shed for readings at error 1,
// told by observe that rate requests a second arrived in each 20 ms reading: it admits exp(-Gain × readings),
// down to its floor.
func overloaded(t *testing.T, rate float64, readings int) (*Controller, *throttling, *named) {
	t.Helper()
	u, l := &throttling{named: named{name: "cpu", load: 2}}, &named{name: "lat"}
	s := NewController(u, l, 0)
	bindController(s, testPolicy)
	for range readings {
		reading(t, s, rate)
	}
	if want := 1 - math.Exp(-settleGain*float64(readings)); want < 1-settleFloor && math.Abs(s.Share()-want) > 1e-9 {
		t.Fatalf("share %v after %d readings at twice Target, want %v", s.Share(), readings, want)
	}
	return s, u, l
}

// reading tells s that rate requests a second arrived over a 20 ms reading (admitted at its share), then reads.
func reading(t *testing.T, s *Controller, rate float64) {
	t.Helper()
	const d = 20 * time.Millisecond
	n := rate * d.Seconds()
	admitted := math.Round(n * (1 - min(s.Share(), 1)))
	s.observe(uint64(admitted), uint64(math.Round(n)-admitted), 0, d)
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
}

func TestControllerLiftsTheShareWhenTheOverloadEnds(t *testing.T) {
	T := DefaultControlTarget
	const fast = 3000.0 // requests a second while it shed
	admitted := math.Exp(-settleGain * 23)
	// The ordinary step after the same reading: the utilisation's shortfall, a tenth of it per reading.
	stepped := func(util float64) float64 { return 1 - admitted*math.Exp(-settleGain*(util/T-1)) }
	tests := []struct {
		name      string
		rate      float64 // requests a second after the overload
		util, lat float64
		throttled bool
		want      float64 // the share shed after one reading
	}{
		// A sixth of the requests arrive: six times the share is admitted, the requests admitted per second stay.
		{"a sixth of the rate", fast / 6, 0.1, 0, false, 1 - 6*admitted},
		// The lift holds Target at most: a sixth of the rate at a CPU at a quarter of Target lifts by four.
		{"bounded by Target", fast / 6, T / 4, 0, false, 1 - 4*admitted},
		// No request arrives and the CPU rests: nothing is shed.
		{"nothing arrives", 0, 0, 0, false, 0},
		// Past the shift the lift is the fall of the rate.
		{"two fifths of the rate", fast / 2.5, 0.1, 0, false, 1 - 2.5*admitted},
		// The neighbours of each condition: only the ordinary step.
		{"the same rate", fast, 0.1, 0, false, stepped(0.1)},
		{"a higher rate", 2 * fast, 0.1, 0, false, stepped(0.1)},
		{"half of the rate", fast / rateShift, 0.1, 0, false, stepped(0.1)},
		{"a little less", fast * 0.9, 0.1, 0, false, stepped(0.1)},
		{"half of Target", fast / 6, T / 2, 0, false, stepped(T / 2)},
		{"a queue", fast / 6, 0.1, 1, false, stepped(0.1)},
		{"throttled", fast / 6, 0.1, 0, true, stepped(0.1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, l := overloaded(t, fast, 23)
			u.load, u.throttled, l.load = tt.util, tt.throttled, tt.lat
			reading(t, s, tt.rate)
			if math.Abs(s.Share()-tt.want) > 1e-9 {
				t.Fatalf("share %v, want %v", s.Share(), tt.want)
			}
		})
	}
}

func TestControllerLiftsNothingWithoutTheRate(t *testing.T) {
	// Read by anything but an Engine, the Controller knows no rate: a CPU at rest moves the share by the ordinary
	// step only.
	u, l := &named{name: "cpu", load: 2}, &named{name: "lat"}
	s := NewController(u, l, 0)
	for range 10 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	before := 1 - s.Share()
	u.load = 0
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if want := 1 - before*math.Exp(settleGain); math.Abs(s.Share()-want) > 1e-9 {
		t.Fatalf("share %v, want %v (the ordinary step)", s.Share(), want)
	}
}

func TestControllerLiftsTheCriticalShareFirst(t *testing.T) {
	// Shedding every ordinary request and some critical ones, a fall of the rate sheds no critical request and
	// lifts the ordinary share from its floor.
	s, u, _ := overloaded(t, 10000, 60)
	if s.Share() <= 1 {
		t.Fatalf("share %v after 60 readings at twice Target, want critical requests shed too", s.Share())
	}
	u.load = 0.05
	reading(t, s, 1000)
	if want := 1 - settleFloor*10; math.Abs(s.Share()-want) > 1e-9 {
		t.Fatalf("share %v after the rate fell tenfold, want %v", s.Share(), want)
	}
}

// surging is a Controller over one fake CPU of capacity cpus that has served rate requests a second of 1 ms of
// CPU each (newSurgingAt: at a utilisation of its own) for ten 20 ms readings, shedding nothing, and a read that
// tells it one more reading: the requests decided per second (those admitted finish, or the share finish of
// them), the CPU they used, and the runnable goroutines the runtime counts after it.
type surging struct {
	s         *Controller
	runnable  uint64
	metric    bool    // whether the runtime has the run-queue metric
	throttles uint64  // the periods a quota throttled the group, as its cpu.stat counts them
	finish    float64 // the share of the requests admitted that finish in the reading
	read      func(t *testing.T, decided float64, util float64)
}

func newSurging(t *testing.T, cpus, rate float64) *surging {
	t.Helper()
	return newSurgingAt(t, cpus, rate, rate*0.001/cpus)
}

// newSurgingAt is newSurging with the CPU at util over the quiet readings, the process's own work beside them.
func newSurgingAt(t *testing.T, cpus, rate, util float64) *surging {
	t.Helper()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	var used time.Duration
	g := &surging{metric: true, finish: 1}
	c := &CPU{capacity: cpus, usage: func() (time.Duration, error) { return used, nil }, now: clock,
		sleep: func(time.Duration) {}, throttle: func() (uint64, error) { return g.throttles, nil }}
	g.s = NewController(c, &named{name: "lat"}, 0)
	g.s.runnable = func() (uint64, bool) { return g.runnable, g.metric }
	bindController(g.s, testPolicy)
	const d = 20 * time.Millisecond
	g.read = func(t *testing.T, decided, util float64) {
		t.Helper()
		now = now.Add(d)
		used += time.Duration(util * cpus * float64(d))
		n := uint64(math.Round(decided * d.Seconds()))
		admitted := uint64(math.Round(float64(n) * (1 - min(g.s.Share(), 1))))
		g.s.observe(admitted, n-admitted, uint64(math.Round(float64(admitted)*g.finish)), d)
		if _, err := g.s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		g.read(t, rate, util)
	}
	if want := util * cpus / rate; g.s.Share() != 0 || math.Abs(g.s.Work().Seconds()-want) > want/100 {
		t.Fatalf("after the quiet readings: share %v, work %v; want 0 and %vs", g.s.Share(), g.s.Work(), want)
	}
	return g
}

func TestControllerCutsTheShareToWhatFitsAtTheOnset(t *testing.T) {
	T := DefaultControlTarget
	// 250 requests a second of 1 ms on one CPU, then 2,900 a second arrive: the CPU decides about what it can
	// serve (900 a second) and the other 2,000 a second wait as runnable goroutines, 40 more each 20 ms reading.
	// The share admitted is cut at once to what the CPU serves at Target: 0.97 × 900 / 2,900, the CPU full.
	g := newSurging(t, 1, 250)
	g.runnable = 40
	g.read(t, 900, 1)
	if want := 1 - T*900/2900; math.Abs(g.s.Share()-want) > 1e-9 || g.s.Share() < 0.6 {
		t.Fatalf("share %v at the onset of a 3× overload, want %v", g.s.Share(), want)
	}
	// The next reading, with the queue no longer growing, moves it by the ordinary step only.
	before := 1 - g.s.Share()
	g.read(t, 900, 1)
	if want := 1 - before*math.Exp(-settleGain*(1/T-1)); math.Abs(g.s.Share()-want) > 1e-9 {
		t.Fatalf("share %v the reading after, want %v (the ordinary step)", g.s.Share(), want)
	}

	// A process that already sheds is past its onset: a jump of its run queue (a thread woken from a freeze finds
	// what arrived meanwhile) moves the share by the ordinary step.
	g = newSurging(t, 1, 250)
	for range 8 {
		g.read(t, 900, 2)
	}
	shed := g.s.Share()
	if shed < 0.5 {
		t.Fatalf("share %v after eight readings at twice Target, want over 0.5", shed)
	}
	g.runnable = 200
	g.read(t, 900, 2) // twice Target: an error clipped to 1
	if want := 1 - (1-shed)*math.Exp(-settleGain); math.Abs(g.s.Share()-want) > 1e-9 {
		t.Fatalf("share %v after a jump of the run queue while shedding, want %v (the ordinary step)", g.s.Share(), want)
	}

	// A quota's freeze: the reading it stopped the process in, and the one after, when the netpoller makes
	// runnable what arrived meanwhile, are not an onset; the reading after those is.
	g = newSurging(t, 1, 250)
	g.throttles++
	g.runnable = 40
	g.read(t, 900, 1)
	g.runnable = 80
	g.read(t, 900, 1)
	if want := max(1-math.Exp(-2*settleGain*(1/T-1)), 0); math.Abs(g.s.Share()-want) > 1e-9 {
		t.Fatalf("share %v over a freeze and the reading after it, want %v (two ordinary steps)", g.s.Share(), want)
	}
	g.runnable = 120
	g.read(t, 900, 1)
	if g.s.Share() < 0.5 {
		t.Fatalf("share %v once the surge outlasts the freeze, want it cut to what fits", g.s.Share())
	}

	// The neighbours: the ordinary step alone, from a share of 0.
	step := func(util float64) float64 { return max(1-math.Exp(-settleGain*(util/T-1)), 0) }
	tests := []struct {
		name     string
		cpus     float64
		decided  float64
		runnable uint64
		util     float64
		metric   bool
		want     float64
	}{
		// Twice the rate or less is a steady load's noise, however little fits.
		{"twice the rate", 1, 500, 0, 1, true, step(1)},
		// What fits is more than half of what is admitted: two CPUs at half their use serve 900 requests a second,
		// and 1,746 at Target, of the 2,900 a second that arrive.
		{"half fits", 2, 900, 40, 0.5, true, step(0.5)},
		// At half of Target, and 80 more runnable goroutines a reading, 0.97 × 900 / 0.5 of the 4,900 a second fit.
		{"CPU at half of Target", 1, 900, 80, 0.5, true, 1 - T*900/0.5/4900},
		// A CPU under half of Target has room, whatever the arrivals.
		{"CPU with room", 1, 900, 80, 0.4, true, step(0.4)},
		{"CPU just under half of Target", 1, 900, 80, 0.48, true, step(0.48)},
		// 7 more runnable goroutines is no queue for the CPU, however few of the requests finish.
		{"a run queue short of 8", 1, 4000, 7, 1, true, step(1)},
		// Without the runtime's run queue only the requests decided count: 900 a second fit.
		{"no run-queue metric", 1, 900, 40, 1, false, step(1)},
		// A shrinking run queue takes nothing below 0 arrivals.
		{"the queue drains", 1, 250, 0, 0.25, true, step(0.25)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newSurging(t, tt.cpus, 250)
			g.runnable, g.metric = tt.runnable, tt.metric
			g.read(t, tt.decided, tt.util)
			if math.Abs(g.s.Share()-tt.want) > 1e-9 {
				t.Fatalf("share %v, want %v (the ordinary step)", g.s.Share(), tt.want)
			}
		})
	}
}

func TestControllerCutsNothingForRequestsThatWait(t *testing.T) {
	// A burst of requests that wait on I/O: 8 arrive in a reading, at 450 a second, and 1 of them finishes, while
	// the process's other work holds its CPU at Target. They sleep, and the run queue does not grow: no cut.
	g := newSurging(t, 1, 50)
	g.finish = 1.0 / 8
	g.runnable = 3
	g.read(t, 450, 1)
	if want := max(1-math.Exp(-settleGain*(1/DefaultControlTarget-1)), 0); math.Abs(g.s.Share()-want) > 1e-9 {
		t.Fatalf("share %v after a burst of requests that wait, want %v (the ordinary step)", g.s.Share(), want)
	}
	// The same burst of CPU-bound requests that queue for the one CPU: cut to the share served.
	g = newSurging(t, 1, 50)
	g.finish = 1.0 / 8
	g.runnable = 8
	g.read(t, 450, 1)
	if want := 1 - DefaultControlTarget*1/(9+8); math.Abs(g.s.Share()-want) > 1e-9 {
		t.Fatalf("share %v after a burst that queues for the CPU, want %v", g.s.Share(), want)
	}
}

func TestControllerCutsNothingForAStartingProcess(t *testing.T) {
	// A process starting up: its own work holds its one CPU at 0.96 while it serves 250 requests a second, so the
	// CPU time of a request averages 3.84 ms. Then 600 a second arrive and all are served as they come, while 8 of
	// its own goroutines start: by the average, 3.84 CPUs' worth arrive, but of the 1,000 a second counted, 600
	// are served. What fits is more than half: the ordinary step alone.
	g := newSurgingAt(t, 1, 250, 0.96)
	g.runnable = 8
	g.read(t, 600, 0.96)
	if want := max(1-math.Exp(-settleGain*(0.96/DefaultControlTarget-1)), 0); math.Abs(g.s.Share()-want) > 1e-9 {
		t.Fatalf("share %v for a starting process, want %v (the ordinary step)", g.s.Share(), want)
	}
}

func TestControllerCutsNothingBeforeItKnowsARequestsCost(t *testing.T) {
	// A surge before any request finished: no request served in the reading tells what fits, and the share
	// moves as it does without a surge, by the ordinary step alone.
	run := func(surge bool) float64 {
		now := time.Unix(1000, 0)
		var used time.Duration
		c := &CPU{capacity: 1, usage: func() (time.Duration, error) { return used, nil },
			now: func() time.Time { return now }, sleep: func(time.Duration) {}}
		s := NewController(c, &named{name: "lat"}, 0)
		var runnable uint64
		s.runnable = func() (uint64, bool) { return runnable, true }
		for i := range 12 {
			now = now.Add(20 * time.Millisecond)
			used += 20 * time.Millisecond
			decided := uint64(5)
			if surge && i == 11 {
				decided, runnable = 60, 100
			}
			s.observe(decided, 0, 0, 20*time.Millisecond)
			if _, err := s.Load(); err != nil {
				t.Fatal(err)
			}
		}
		if s.Work() != 0 {
			t.Fatalf("work %v with nothing finished, want 0", s.Work())
		}
		return s.Share()
	}
	quiet, surged := run(false), run(true)
	if quiet <= 0 || surged != quiet {
		t.Fatalf("share %v after a surge with no request's cost known, want %v (the ordinary step, above 0)", surged, quiet)
	}
}
