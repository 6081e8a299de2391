package core

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// step is one reading of a Settled's two signals and what the Settled must make of it.
type step struct {
	util, lat float64
	utilErr   error
	latErr    error
	wantShare float64
	wantLoad  float64
	wantErr   bool
}

// runSteps feeds steps to a Settled over two named signals, bound to the adapters' default bands.
func runSteps(t *testing.T, steps []step) {
	t.Helper()
	u, l := &named{name: "cpu"}, &named{name: "lat"}
	s := NewSettled(u, l, 0)
	bindSettled(s, testPolicy)
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

func TestSettledMovesTheShareByTheUtilisation(t *testing.T) {
	g, T := settleGain, DefaultSettleTarget
	runSteps(t, []step{
		// Below Target nothing is shed and the load is the reading itself, up to Lower.
		{util: 0.5, wantShare: 0, wantLoad: 0.5},
		{util: 0.93, wantShare: 0, wantLoad: 0.90},
		// Above Target the share grows by Gain × the excess...
		{util: T + 0.2, wantShare: g * 0.2, wantLoad: band(g * 0.2)},
		// ...and shrinks by Gain × the shortfall, never below 0.
		{util: T - 0.1, wantShare: g*0.2 - g*0.1, wantLoad: band(g*0.2 - g*0.1)},
		{util: 0.2, wantShare: 0, wantLoad: 0.2},
	})
}

func TestSettledGrowsFasterWhileTheUtilisationStaysAbove(t *testing.T) {
	// 0.97 is only 0.01 above Target: without the doubling a process burning its CPU would take 20 s to shed
	// everything. Each reading in a row doubles the smallest error, from settlePersist up to 32 times.
	var steps []step
	share := 0.0
	for k := range 8 {
		share += settleGain * max(0.01, settlePersist*math.Exp2(float64(min(k, settleMaxDoublings))))
		steps = append(steps, step{util: DefaultSettleTarget + 0.01, wantShare: share, wantLoad: band(share)})
	}
	// One reading below Target starts the count again.
	share -= settleGain * 0.06
	steps = append(steps, step{util: DefaultSettleTarget - 0.06, wantShare: share, wantLoad: band(share)})
	share += settleGain * 0.01
	steps = append(steps, step{util: DefaultSettleTarget + 0.01, wantShare: share, wantLoad: band(share)})
	runSteps(t, steps)
}

func TestSettledJumpsOnAQueue(t *testing.T) {
	k, g, T := settleKick, settleGain, DefaultSettleTarget
	runSteps(t, []step{
		{util: 0.5, lat: 0.8, wantShare: 0, wantLoad: 0.8},
		// A latency inside the band sheds at once what the band says of it, as the snapshot rule would, without
		// moving the share: 0.92 is 0.4 of the way from 0.90 to 0.95.
		{util: 0.5, lat: 0.92, wantShare: 0, wantLoad: band(0.4)},
		// At 1, the target, every ordinary request is shed for as long as it lasts; the share is not raised yet.
		{util: 0.5, lat: 1.0, wantShare: 0, wantLoad: 0.95},
		// Above it the share jumps by Kick × the excess, and it does not come down while goroutines queue, even
		// with the CPU below Target...
		{util: T, lat: 1.2, wantShare: k * 0.2, wantLoad: 0.95},
		{util: 0.7, lat: 1.5, wantShare: k*0.2 + k*0.5, wantLoad: 0.95},
		{util: T, lat: 2, wantShare: k * 1.7, wantLoad: 0.95},
		// ...but a queue alone never sheds critical requests.
		{util: T, lat: 2, wantShare: 1, wantLoad: 0.95},
		{util: T, lat: 2, wantShare: 1, wantLoad: 0.95},
		// Once the queue is gone the share comes down with the CPU, and what is shed is the share again.
		{util: T - 0.5, lat: 0, wantShare: 1 - g*0.5, wantLoad: band(1 - g*0.5)},
	})
}

func TestSettledLetsALoneQueueOnABusyProcessPass(t *testing.T) {
	k, g, T := settleKick, settleGain, DefaultSettleTarget
	// Settle a busy process: ~30 readings at Target bring its recent utilisation above settleStarved, and a
	// share of 0.6 stands for what the utilisation settled on.
	u, l := &named{name: "cpu"}, &named{name: "lat"}
	s := NewSettled(u, l, 0)
	bindSettled(s, testPolicy)
	u.load = T
	for range 30 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	s.share = 0.6
	read := func(util, lat float64) (share, load float64) {
		t.Helper()
		u.load, l.load = util, lat
		got, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s.Share(), got
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// A lone queue sheds every ordinary request of that reading (the floor) and leaves the share, at any
	// utilisation from half of the CPU up; above Target only the utilisation's own step moves it.
	for _, util := range []float64{settleStarved, 0.8, T, 1.3} {
		want := 0.6 + g*max(util-T, 0)
		if share, load := read(util, 2); !near(share, want) || !near(load, 0.95) {
			t.Fatalf("lone queue at utilisation %v: share %v load %v, want share %v load 0.95", util, share, load, want)
		}
		s.share = 0.6
		if share, _ := read(T, 0); !near(share, 0.6) {
			t.Fatalf("after the lone queue at %v: share %v, want 0.6", util, share)
		}
	}
	// A queue that lasts into the next reading jumps the share.
	read(T, 1.4)
	if share, _ := read(T, 1.4); !near(share, 0.6+k*0.4) {
		t.Fatalf("second queue in a row: share %v, want %v", share, 0.6+k*0.4)
	}
	read(T-0.5, 0) // the queue is gone: the share comes down with the CPU
	if share := s.Share(); !near(share, 0.6+k*0.4-g*0.5) {
		t.Fatalf("after the queue: share %v, want %v", share, 0.6+k*0.4-g*0.5)
	}
	// A lone queue on a process that uses less than half of its CPU now jumps it at once: starved, it gets the
	// CPU in slices, and each slice's queue may be the only one it sees.
	s.share = 0.2
	if share, _ := read(settleStarved-0.1, 1.5); !near(share, 0.2+k*0.5) {
		t.Fatalf("lone queue below half of the CPU: share %v, want %v", share, 0.2+k*0.5)
	}
}

func TestSettledReachesTheCriticalBand(t *testing.T) {
	// A utilisation that stays far above Target with every ordinary request shed moves on to critical ones.
	var steps []step
	share := 0.0
	for share < settleMaxShare {
		share = min(share+settleGain*(2-DefaultSettleTarget), settleMaxShare)
		want := band(share)
		if share > 1 {
			want = 0.98 + (share-1)*0.02
		}
		steps = append(steps, step{util: 2, wantShare: share, wantLoad: want})
	}
	steps = append(steps, step{util: 2, wantShare: settleMaxShare, wantLoad: 1.0})
	runSteps(t, steps)
	if len(steps) > 25 {
		t.Fatalf("%d readings to shed everything at twice the CPU", len(steps))
	}
}

func TestSettledLeavesAFailedSignalOut(t *testing.T) {
	gone := errors.New("gone")
	first := settleGain*(1.96-DefaultSettleTarget) + settleKick*0.96
	second := first + settleGain*(0.46-DefaultSettleTarget)
	runSteps(t, []step{
		// Without the utilisation, the latency stands in for it.
		{utilErr: gone, lat: 1.96, wantShare: first, wantLoad: 0.95}, // the latency above the band sheds every ordinary request
		// Without the latency, the utilisation alone moves the share.
		{util: 0.46, latErr: gone, wantShare: second, wantLoad: band(second)},
		{utilErr: gone, latErr: gone, wantErr: true},
		{util: math.NaN(), latErr: gone, wantErr: true},
	})
	s := NewSettled(&named{name: "cpu", err: gone}, nil, 0)
	if _, err := s.Load(); !errors.Is(err, gone) {
		t.Fatalf("Load without a latency signal = %v, want the utilisation's error", err)
	}
}

func TestSettledReadingsAndName(t *testing.T) {
	u, l := &named{name: "cpu", load: 0.4}, &named{name: "lat", load: 0.1}
	s := NewSettled(u, l, 0.8)
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
	if one := NewSettled(u, nil, 0); len(one.Signals()) != 1 || one.String() != "settled at 0.97 of cpu" {
		t.Fatalf("without latency: %v, %d signals", one, len(one.Signals()))
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

// plant is a process fed offered times its capacity: what it admits and what it has left over from before use
// util = backlog + admitted (capped at maxUtil, its CPU), and beyond its capacity a backlog builds, read as a
// latency of backlog/target.
type plant struct {
	offered, maxUtil, backlog float64
}

func (p *plant) step(share float64) (util, lat float64) {
	admitted := p.offered * (1 - min(share, 1))
	util = min(p.backlog+admitted, p.maxUtil)
	p.backlog = max(p.backlog+admitted-1, 0)
	return util, min(p.backlog/0.2, schedMaxLoad)
}

func TestSettledSettlesOnTheShareThatFits(t *testing.T) {
	for _, offered := range []float64{1.25, 2, 4, 10} {
		u, l := &named{name: "cpu"}, &named{name: "lat"}
		s := NewSettled(u, l, 0)
		bindSettled(s, testPolicy)
		p := &plant{offered: offered, maxUtil: 1.6}
		var shares []float64
		for range 400 {
			u.load, l.load = p.step(s.Share())
			if _, err := s.Load(); err != nil {
				t.Fatal(err)
			}
			shares = append(shares, s.Share())
		}
		want := 1 - DefaultSettleTarget/offered // the share that holds the process at Target
		for i, got := range shares[200:] {
			if math.Abs(got-want) > 0.02 {
				t.Fatalf("offered %v: reading %d share %.4f, want within 0.02 of %.4f", offered, 200+i, got, want)
			}
		}
		if p.backlog > 0.5 {
			t.Fatalf("offered %v: backlog %v left after settling", offered, p.backlog)
		}
		// When the overload ends (0.8 of capacity offered), the share comes down within 40 readings, and the load is
		// the reading again.
		p.offered = 0.8
		for i := range 40 {
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
			if i == 39 {
				t.Fatalf("offered %v: share %v after 40 readings at 0.8 of capacity, want 0", offered, s.Share())
			}
		}
	}
}

func TestEngineBindsAndDoesNotSmoothASettled(t *testing.T) {
	u := &named{name: "cpu", load: DefaultSettleTarget + 0.5}
	s := NewSettled(u, nil, 0)
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
	if !strings.HasPrefix(st.Signal, "settled at 0.97 of cpu") || len(st.Readings) != 1 || st.Readings[0].Load != u.load {
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

func TestDefaultSignalSettlesCPUBesideLatencyAndRunQueue(t *testing.T) {
	d := DefaultSignal(0)
	sigs := d.Signals()
	if len(sigs) != 2 || d.Target() != DefaultSettleTarget {
		t.Fatalf("DefaultSignal has %d signals, target %v", len(sigs), d.Target())
	}
	if _, ok := sigs[0].(*CPU); !ok {
		t.Fatalf("first signal %T, want *CPU", sigs[0])
	}
	lat, ok := sigs[1].(*Combined)
	if !ok || len(lat.Signals()) != 2 {
		t.Fatalf("second signal %v, want the highest of scheduling latency and the run queue", sigs[1])
	}
	if s, ok := lat.Signals()[0].(*SchedLatency); !ok || s.Target() != DefaultSchedTarget {
		t.Fatalf("latency's first signal %v, want scheduling latency over %v", lat.Signals()[0], DefaultSchedTarget)
	}
	if q, ok := lat.Signals()[1].(*RunQueue); !ok || q.Target() != DefaultRunQueueTarget {
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
	e := NewEngine(Config{DisableMetrics: true}.WithDefaults(testDefaults))
	defer e.Close()
	st := e.Status()
	if !strings.HasPrefix(st.Signal, "settled at 0.97 of CPU of ") || !strings.Contains(st.Signal, "scheduler latency") ||
		!strings.Contains(st.Signal, "runnable goroutines") || len(st.Readings) != 3 {
		t.Fatalf("Status = %+v; want the default settled signal with three readings", st)
	}
}

// starvedSettled returns a Settled whose recent utilisation has settled at util with no queue.
func starvedSettled(t *testing.T, util float64) (*Settled, *named, *named) {
	t.Helper()
	u, l := &named{name: "cpu", load: util}, &named{name: "lat"}
	s := NewSettled(u, l, 0)
	bindSettled(s, testPolicy)
	for range 100 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	return s, u, l
}

func TestSettledLearnsTheCeilingOfAStarvedProcess(t *testing.T) {
	// A process using 0.2 of its CPUs queues: it is starved. Each queueing reading lowers the ceiling by half at
	// most, down to the recent utilisation.
	s, u, l := starvedSettled(t, 0.2)
	if s.ceiling != 1 {
		t.Fatalf("ceiling %v before any queue, want 1", s.ceiling)
	}
	l.load = 2
	for i, want := range []float64{0.5, 0.25, 0.2} {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.ceiling-want) > 0.01 {
			t.Fatalf("queueing reading %d: ceiling %v, want %v", i, s.ceiling, want)
		}
	}
	// With the queue gone the share holds the utilisation near 0.97 × 0.2 rather than running down: at 0.25 it
	// still grows, where without a ceiling it would fall by 0.1 × (0.97 − 0.25) a reading.
	l.load, u.load = 0, 0.25
	before := s.Share()
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if s.Share() <= before {
		t.Fatalf("starved at a ceiling of 0.2, utilisation 0.25: share went from %v to %v, want it to grow", before, s.Share())
	}
	// Well under the ceiling it comes down.
	u.load = 0.05
	before = s.Share()
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if s.Share() >= before {
		t.Fatalf("utilisation 0.05 under a ceiling of about 0.2: share went from %v to %v, want it to fall", before, s.Share())
	}
	// The ceiling is forgotten: 0.5 % a reading, and it stops binding at 0.5.
	for range 400 {
		if _, err := s.Load(); err != nil {
			t.Fatal(err)
		}
	}
	if s.ceiling != 1 {
		t.Fatalf("ceiling %v after 400 readings without a queue, want 1", s.ceiling)
	}
}

func TestSettledCeilingNeedsStarvation(t *testing.T) {
	tests := []struct {
		name        string
		recent, now float64 // the recent utilisation and the queueing reading's
		queueings   int
		wantCeiling float64
	}{
		{"busy process queueing: not starved", 0.9, 0.9, 5, 1},
		{"a backlog draining at full CPU after a quiet spell", 0.1, 0.95, 5, 1},
		{"a quiet spell after a busy one", 0.9, 0.1, 1, 1},
		{"one burst on an idle process halves it but does not bind", 0.01, 0.01, 1, 0.5},
		{"starved: down to the recent utilisation", 0.3, 0.3, 3, 0.3},
		{"just above half of its CPU: not starved", 0.55, 0.55, 5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, l := starvedSettled(t, tt.recent)
			u.load, l.load = tt.now, 2
			for range tt.queueings {
				if _, err := s.Load(); err != nil {
					t.Fatal(err)
				}
			}
			if math.Abs(s.ceiling-tt.wantCeiling) > 0.02 {
				t.Fatalf("ceiling %v, want %v", s.ceiling, tt.wantCeiling)
			}
		})
	}
	// A ceiling at 0.5 does not bind: at 0.7 of its CPU (below Target) the share comes down at the usual rate.
	s, u, l := starvedSettled(t, 0.01)
	l.load = 2
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	l.load, u.load = 0, 0.7
	before := s.Share()
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if want := before + settleGain*(0.7-DefaultSettleTarget); math.Abs(s.Share()-want) > 1e-9 {
		t.Fatalf("share %v after a lone burst, want %v as without a ceiling", s.Share(), want)
	}
}
