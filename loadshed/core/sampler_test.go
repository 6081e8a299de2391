package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// logRecorder is a Logger that keeps what it is told.
type logRecorder struct {
	mu          sync.Mutex
	infos, warn []string
}

func (l *logRecorder) Infof(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.infos = append(l.infos, fmt.Sprintf(format, v...))
}

func (l *logRecorder) Warnf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warn = append(l.warn, fmt.Sprintf(format, v...))
}

func (l *logRecorder) lines() (infos, warns []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.infos...), append([]string(nil), l.warn...)
}

// explained is a Signal that says what it reads, like the built-in ones.
type explained struct {
	named
	reason string
}

func (e *explained) Reason() string { return e.reason }

func TestFirstReadingBeforeFirstAdmit(t *testing.T) {
	// No sampler tick can have happened yet: the first reading is taken in NewEngine.
	e, _ := newTestEngine(t, testConfig{Signal: coretest.NewFixedLoad(1), Interval: time.Hour})
	if st := e.Status(); st.Load != 1 || st.Probability != 1 || st.UpdatedAt == nil {
		t.Fatalf("status right after NewEngine: %+v", st)
	}
	if e.Admit(false) {
		t.Fatal("the first decision admitted at load 1")
	}
}

func TestSamplerSmoothsAndSurvivesErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		readings := []struct {
			v   float64
			err error
		}{
			{0.5, nil},              // first reading, taken as is
			{1.0, nil},              // 0.5 + 0.5*(1.0-0.5) = 0.75
			{0, errors.New("boom")}, // kept: 0.75
			{math.NaN(), nil},       // a bad reading is an error too: 0.75
			{0.25, nil},             // 0.75 + 0.5*(0.25-0.75) = 0.5
		}
		i := 0
		sig := SignalFunc(func() (float64, error) {
			r := readings[min(i, len(readings)-1)]
			i++
			return r.v, r.err
		})
		lg := &logRecorder{}
		e := NewEngine(testConfig{Signal: sig, Smoothing: 0.5, Interval: time.Second, DisableMetrics: true}.WithDefaults(testDefaults), lg)
		want := []float64{0.5, 0.75, 0.75, 0.75, 0.5}
		for step, w := range want {
			if step > 0 {
				time.Sleep(time.Second)
				synctest.Wait()
			}
			if got := e.Status().Load; math.Abs(got-w) > 1e-12 {
				t.Fatalf("after reading %d: load %v, want %v", step, got, w)
			}
		}
		if n := e.Status().SamplerErrors; n != 2 {
			t.Fatalf("sampler errors %d, want 2", n)
		}
		// Each new error is logged once, to the configured Logger.
		wantWarns := []string{
			"loadshed: signal error, keeping the last load: boom",
			"loadshed: signal error, keeping the last load: " + errBadReading.Error(),
		}
		if _, warns := lg.lines(); fmt.Sprint(warns) != fmt.Sprint(wantWarns) {
			t.Fatalf("warnings %q, want %q", warns, wantWarns)
		}
		_ = e.Close()
		_ = e.Close() // idempotent
	})
}

func TestSamplerLogsARepeatedErrorOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lg := &logRecorder{}
		e := NewEngine(testConfig{Interval: time.Second, DisableMetrics: true, Signal: SignalFunc(func() (float64, error) { return 0, errors.New("gone") })}.WithDefaults(testDefaults), lg)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		_ = e.Close()
		if _, warns := lg.lines(); len(warns) != 1 || e.Status().SamplerErrors != 6 {
			t.Fatalf("6 failed readings logged %q (%d counted); want one warning", warns, e.Status().SamplerErrors)
		}
	})
}

func TestEngineLogsWhatItReads(t *testing.T) {
	lg := &logRecorder{}
	e := NewEngine(testConfig{DisableMetrics: true, Interval: time.Hour,
		Signal: NewMax(&explained{named{name: "a"}, "reads a"}, &named{name: "b"})}.WithDefaults(testDefaults), lg)
	defer e.Close()
	want := []string{"loadshed: load is max(a, b)", "loadshed: a: reads a"}
	if infos, _ := lg.lines(); fmt.Sprint(infos) != fmt.Sprint(want) {
		t.Fatalf("logged %q, want %q", infos, want)
	}
}

// The default's start-up line says what it does in words before naming its signals.
func TestEngineSaysWhatTheSettledDefaultDoes(t *testing.T) {
	lg := &logRecorder{}
	e := NewEngine(testConfig{DisableMetrics: true, Interval: time.Hour,
		Signal: NewController(&named{name: "cpu"}, NewMax(&named{name: "a"}, &named{name: "b"}), 0)}.WithDefaults(testDefaults), lg)
	defer e.Close()
	want := "loadshed: sheds the share of requests that keeps this process's CPU use at 97% of what it may use (cpu), " +
		"and limits the requests in flight while its goroutines wait for a CPU (max(a, b))"
	if infos, _ := lg.lines(); len(infos) == 0 || infos[0] != want {
		t.Fatalf("logged %q, want first %q", infos, want)
	}
}

func TestContextStopsTheSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		_ = NewEngine(testConfig{Context: ctx, Interval: time.Second, DisableMetrics: true,
			Signal: SignalFunc(func() (float64, error) { reads.Add(1); return 0, nil })}.WithDefaults(testDefaults), nil)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := reads.Load(); n != 4 { // the first reading in NewEngine, then one per second
			t.Fatalf("%d readings after 3 s, want 4", n)
		}
		cancel()
		synctest.Wait() // the sampler must exit: synctest fails if a goroutine is left blocked in the bubble
		time.Sleep(5 * time.Second)
		if n := reads.Load(); n != 4 {
			t.Fatalf("sampler kept reading after its context ended: %d", n)
		}
	})
}

func TestContextDoneLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	e := NewEngine(testConfig{Context: ctx, Signal: coretest.NewFixedLoad(1), Interval: time.Millisecond, DisableMetrics: true}.WithDefaults(testDefaults), nil)
	cancel()
	<-e.done
	// The sampler is gone (VerifyNone above); decisions go on with the last load.
	if e.Admit(false) {
		t.Fatal("a decision after the context ended admitted at load 1")
	}
}

// TestContextDoneUnregistersTheMetrics: a done Config.Context ends the engine as Close does, metrics included,
// as in every module of the suite; a later Close is a no-op.
func TestContextDoneUnregistersTheMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	e := NewEngine(testConfig{Context: ctx, Signal: coretest.NewFixedLoad(0.5), Interval: time.Millisecond, Registerer: reg}.WithDefaults(testDefaults), nil)
	if n := gatheredFamilies(t, reg); n == 0 {
		t.Fatal("no metrics registered")
	}
	cancel()
	<-e.done
	if n := gatheredFamilies(t, reg); n != 0 {
		t.Fatalf("%d metric families still registered after the context ended", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The name is free again: a new engine registers.
	e2 := NewEngine(testConfig{Signal: coretest.NewFixedLoad(0.5), Interval: time.Millisecond, Registerer: reg}.WithDefaults(testDefaults), nil)
	defer e2.Close()
	if n := gatheredFamilies(t, reg); n == 0 {
		t.Fatal("a new engine with the same name could not register")
	}
}

func gatheredFamilies(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return len(mfs)
}

func TestPaceTable(t *testing.T) {
	const interval, idle = 20 * time.Millisecond, 160 * time.Millisecond
	t0 := time.Unix(1000, 0)
	type step struct {
		after              time.Duration // since the previous reading
		admitted, rejected uint64        // the counts at this reading
		load, reading      float64
		woken              bool
		wantWait           time.Duration
		wantWakeAt         uint64 // the admitted count that makes the next reading due
		wantShedAt         uint64 // the rejected count that does
	}
	tests := []struct {
		name  string
		idle  time.Duration
		steps []step
	}{
		{"quiet readings double the wait up to IdleInterval", idle, []step{
			{after: 0, load: 0.1, reading: 0.1, woken: true, wantWait: interval},
			{after: 20 * time.Millisecond, load: 0.1, reading: 0.1, wantWait: 40 * time.Millisecond, wantWakeAt: 8, wantShedAt: 8},
			{after: 40 * time.Millisecond, load: 0.1, reading: 0.1, wantWait: 80 * time.Millisecond, wantWakeAt: 8, wantShedAt: 8},
			{after: 80 * time.Millisecond, load: 0.1, reading: 0.1, wantWait: idle, wantWakeAt: 8, wantShedAt: 8},
			{after: idle, load: 0.1, reading: 0.1, wantWait: idle, wantWakeAt: 8, wantShedAt: 8},
		}},
		{"the due counts allow twice the requests of the next wait, at most two Intervals, at the last rate", idle, []step{
			// The first reading has no rate: nothing is due before the sampler's next reading.
			{after: 0, admitted: 100, rejected: 10, woken: true, wantWait: interval},
			// 50 admitted in 20ms, next wait 40ms: 100 expected, due at 200 more; 20 rejected: 40 expected, 80.
			{after: 20 * time.Millisecond, admitted: 150, rejected: 30, wantWait: 40 * time.Millisecond,
				wantWakeAt: 350, wantShedAt: 110},
			// 3 admitted in 40ms, next wait 80ms but two Intervals counted: 3 expected, 6 allowed, at least 8;
			// none rejected: 8 allowed.
			{after: 40 * time.Millisecond, admitted: 153, rejected: 30, wantWait: 80 * time.Millisecond,
				wantWakeAt: 161, wantShedAt: 38},
			// 6 admitted in 80ms, the same rate, next wait 160ms: 3 expected in two Intervals, 8 allowed.
			{after: 80 * time.Millisecond, admitted: 159, rejected: 30, wantWait: idle,
				wantWakeAt: 167, wantShedAt: 38},
			// 40 admitted in 80ms after 6: a surge, the next wait is Interval and 10 are expected in it.
			{after: 80 * time.Millisecond, admitted: 199, rejected: 30, wantWait: interval,
				wantWakeAt: 219, wantShedAt: 38},
			// Not quiet: the next wait is Interval, 800 admitted in 80ms give 200 in it; 400 rejected, 100.
			{after: 80 * time.Millisecond, admitted: 999, rejected: 430, load: 0.6, reading: 0.6, wantWait: interval,
				wantWakeAt: 1399, wantShedAt: 630},
		}},
		{"half of Lower is not quiet, in the smoothed load or the reading", idle, []step{
			{after: 0, load: 0.1, reading: 0.1, woken: true, wantWait: interval},
			{after: 20 * time.Millisecond, load: 0.1, reading: 0.1, wantWait: 40 * time.Millisecond, wantWakeAt: 8, wantShedAt: 8},
			{after: 40 * time.Millisecond, load: 0.45, reading: 0.1, wantWait: interval, wantWakeAt: 8, wantShedAt: 8},
			{after: 20 * time.Millisecond, load: 0.1, reading: 0.1, wantWait: 40 * time.Millisecond, wantWakeAt: 8, wantShedAt: 8},
			{after: 40 * time.Millisecond, load: 0.3, reading: 0.46, wantWait: interval, wantWakeAt: 8, wantShedAt: 8},
			{after: 20 * time.Millisecond, load: 0.44, reading: 0.44, wantWait: 40 * time.Millisecond, wantWakeAt: 8, wantShedAt: 8},
		}},
		{"a woken sampler reads again after Interval", idle, []step{
			{after: 0, woken: true, wantWait: interval},
			{after: 20 * time.Millisecond, wantWait: 40 * time.Millisecond, wantWakeAt: 8, wantShedAt: 8},
			// 8 admitted in 5ms: 32 expected in the next 20ms.
			{after: 5 * time.Millisecond, admitted: 8, woken: true, wantWait: interval, wantWakeAt: 72, wantShedAt: 8},
			{after: 20 * time.Millisecond, admitted: 8, wantWait: 40 * time.Millisecond, wantWakeAt: 16, wantShedAt: 8},
		}},
		{"a surge ends the rest: more than twice the previous rate, at least dueMinRequests", idle, []step{
			{after: 0, load: 0.1, reading: 0.1, woken: true, wantWait: interval},
			// 40 in 20ms: the first rate known, 2000/s; 80 allowed in the next 40ms.
			{after: 20 * time.Millisecond, admitted: 40, load: 0.1, reading: 0.1, wantWait: 40 * time.Millisecond,
				wantWakeAt: 200, wantShedAt: 8},
			// 80 in 40ms: the same rate, still resting; 160 allowed in two Intervals of the next 80ms.
			{after: 40 * time.Millisecond, admitted: 120, load: 0.1, reading: 0.1, wantWait: 80 * time.Millisecond,
				wantWakeAt: 280, wantShedAt: 8},
			// 161 in 40ms (a request found the reading due): 4025/s, more than twice 2000/s; 161 allowed in the
			// next Interval.
			{after: 40 * time.Millisecond, admitted: 281, load: 0.1, reading: 0.1, wantWait: interval,
				wantWakeAt: 442, wantShedAt: 8},
			// Rejected requests count as arrived: 81 in 20ms, 4050/s, is no surge after 4025/s ...
			{after: 20 * time.Millisecond, admitted: 281, rejected: 81, load: 0.1, reading: 0.1,
				wantWait: 40 * time.Millisecond, wantWakeAt: 289, wantShedAt: 405},
			// ... and 325 in 40ms, 8125/s, is one.
			{after: 40 * time.Millisecond, admitted: 281, rejected: 406, load: 0.1, reading: 0.1, wantWait: interval,
				wantWakeAt: 289, wantShedAt: 731},
			// 7 requests after none are no surge, however fast.
			{after: 20 * time.Millisecond, admitted: 281, rejected: 406, load: 0.1, reading: 0.1,
				wantWait: 40 * time.Millisecond, wantWakeAt: 289, wantShedAt: 414},
			{after: time.Millisecond, admitted: 288, rejected: 406, load: 0.1, reading: 0.1,
				wantWait: 80 * time.Millisecond, wantWakeAt: 848, wantShedAt: 414},
		}},
		{"IdleInterval equal to Interval never rests", interval, []step{
			{after: 0, woken: true, wantWait: interval},
			{after: 20 * time.Millisecond, wantWait: interval, wantWakeAt: 8, wantShedAt: 8},
			{after: 20 * time.Millisecond, wantWait: interval, wantWakeAt: 8, wantShedAt: 8},
		}},
		{"a count that wraps to 0 is due at 1: 0 means never", idle, []step{
			{after: 0, admitted: math.MaxUint64 - 7, rejected: math.MaxUint64 - 7, woken: true, wantWait: interval},
			// No request since: the fewest requests, dueMinRequests, from a count 8 below the largest.
			{after: 20 * time.Millisecond, admitted: math.MaxUint64 - 7, rejected: math.MaxUint64 - 7,
				wantWait: 40 * time.Millisecond, wantWakeAt: 1, wantShedAt: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPace(interval, tt.idle, 0.9)
			at := t0
			for i, s := range tt.steps {
				at = at.Add(s.after)
				wait, wakeAt, shedAt, resting := p.next(at, s.admitted, s.rejected, s.load, s.reading, s.woken)
				if wait != s.wantWait || wakeAt != s.wantWakeAt || shedAt != s.wantShedAt || resting != (wait > interval) {
					t.Fatalf("step %d: wait %v, due at %d admitted, %d rejected, resting %v; want %v, %d, %d",
						i, wait, wakeAt, shedAt, resting, s.wantWait, s.wantWakeAt, s.wantShedAt)
				}
			}
		})
	}
}

// countedEngine is an Engine whose sampler reads every 20ms, resting up to idle, a load that starts at load and
// counts its readings. Smoothing 1: the published load is the last reading.
func countedEngine(load float64, idle time.Duration) (*Engine, *coretest.FixedLoad, *atomic.Int64) {
	reads := new(atomic.Int64)
	l := coretest.NewFixedLoad(load)
	e := NewEngine(testConfig{Interval: 20 * time.Millisecond, IdleInterval: idle, Smoothing: 1, DisableMetrics: true,
		Signal: SignalFunc(func() (float64, error) { reads.Add(1); return l.Load() })}.WithDefaults(testDefaults), nil)
	return e, l, reads
}

func TestSamplerRestsWhileQuietAndWakesOnASurge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, load, reads := countedEngine(0.1, 160*time.Millisecond)
		defer e.Close()

		// Quiet: readings at 0 (NewEngine), 20, 60, 140, 300, 460, 620, 780 and 940ms, not one per 20ms.
		time.Sleep(time.Second)
		synctest.Wait()
		if n := reads.Load(); n != 9 {
			t.Fatalf("%d readings in a quiet second, want 9", n)
		}
		if !e.Status().Resting {
			t.Fatal("Status().Resting is false while the sampler rests")
		}

		// No request came in the last wait, so the 8th admitted request is a surge: it takes the reading itself.
		for range 7 {
			e.Admit(false)
		}
		synctest.Wait()
		if n := reads.Load(); n != 9 {
			t.Fatalf("7 requests took a reading (%d readings)", n)
		}
		e.Admit(false)
		synctest.Wait()
		if n := reads.Load(); n != 10 {
			t.Fatalf("the 8th request took no reading (%d readings, want 10)", n)
		}
		if e.Status().Resting {
			t.Fatal("the sampler still rests after a surge")
		}

		// A load that is not quiet: one reading per Interval.
		load.Set(0.5)
		time.Sleep(20 * time.Millisecond) // the woken sampler's next reading: 0.5 is read
		synctest.Wait()
		before := reads.Load()
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if n := reads.Load() - before; n != 10 {
			t.Fatalf("%d readings in 200ms at load 0.5, want 10", n)
		}
		if st := e.Status(); st.Resting || st.Load != 0.5 {
			t.Fatalf("at load 0.5: %+v", st)
		}
	})
}

// A steady light load does not end the rest: its requests take a reading every two Intervals' worth of twice
// their rate (see pace), each finds the same rate and a quiet load, and the wait stays at IdleInterval.
func TestASteadyLightLoadLeavesTheSamplerResting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _, reads := countedEngine(0.1, 160*time.Millisecond)
		defer e.Close()
		time.Sleep(time.Second)
		synctest.Wait()

		requests := func(d time.Duration) {
			for range d / time.Millisecond {
				if !e.Admit(false) {
					t.Fatal("a request rejected at load 0.1")
				}
				time.Sleep(time.Millisecond)
				synctest.Wait()
			}
		}
		requests(time.Second) // the onset is a surge: the sampler reads at Interval until the rate holds
		before := reads.Load()
		requests(960 * time.Millisecond)
		// A reading every 80ms (twice the 40 requests of two Intervals), not every 20ms (48) nor every 160ms (6).
		if n := reads.Load() - before; n < 11 || n > 13 {
			t.Fatalf("%d readings in 960ms of 1000 requests/s, want 12", n)
		}
		if !e.Status().Resting {
			t.Fatal("a steady light load ended the rest")
		}

		// Four times the rate is a surge: within two Intervals the sampler reads at every Interval.
		for range 40 {
			for range 4 {
				e.Admit(false)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		if e.Status().Resting {
			t.Fatal("the sampler still rests 40ms into a surge of four times the rate")
		}
	})
}

func TestSamplerNeverRestsWithIdleIntervalEqualToInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int64
		e := NewEngine(testConfig{Interval: 20 * time.Millisecond, IdleInterval: 20 * time.Millisecond, DisableMetrics: true,
			Signal: SignalFunc(func() (float64, error) { reads.Add(1); return 0, nil })}.WithDefaults(testDefaults), nil)
		defer e.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := reads.Load(); n != 51 || e.Status().Resting {
			t.Fatalf("%d readings in a second (resting %v), want 51", n, e.Status().Resting)
		}
	})
}

// Before each reading the Engine tells its Controller the share of the requests decided since the previous one
// that it admitted, of both priorities; in dry-run mode every request is served, so all count as admitted.
func TestEngineTellsTheControllerTheShareAdmitted(t *testing.T) {
	for _, dry := range []bool{false, true} {
		s := NewController(&named{name: "cpu"}, &named{name: "lat"}, 0)
		e := NewEngine(testConfig{DisableMetrics: true, Interval: time.Hour, DryRun: dry, Signal: s}.WithDefaults(testDefaults), nil)
		admitted := func() float64 { return math.Float64frombits(s.admitted.Load()) }
		steps := []struct {
			admitted, rejected, critAdmitted, critRejected uint64
			want, dryWant                                  float64
		}{
			{admitted: 1, rejected: 3, want: 0.25, dryWant: 1},
			{want: 1, dryWant: 1}, // nothing decided since
			{admitted: 2, critAdmitted: 1, critRejected: 1, want: 0.75, dryWant: 1},
			{rejected: 5, want: 0, dryWant: 1},
		}
		for i, st := range steps {
			// Admit counts a rejection in dry-run mode as rejected, not admitted; the Engine serves it.
			e.normal.admitted.Add(st.admitted)
			e.normal.rejected.Add(st.rejected)
			e.crit.admitted.Add(st.critAdmitted)
			e.crit.rejected.Add(st.critRejected)
			e.Sample()
			want := st.want
			if dry {
				want = st.dryWant
			}
			if got := admitted(); got != want {
				t.Fatalf("dry run %v, step %d: the Controller counts its run queues by %v, want %v", dry, i, got, want)
			}
		}
		_ = e.Close()
	}
}

// A sampler held off its CPU (in a process with one P, by a surge of arriving requests) reads late, and every
// request decided meanwhile is decided by the last, light load. Under synctest the clock stands still while the
// test goroutine runs, so its sampler's ticker cannot fire: the requests themselves must take the reading that is
// due, twice the requests of a wait at the last rate, as admitted or as rejected ones.
func TestARequestTakesTheReadingALateSamplerOwes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, load, reads := countedEngine(0.5, 20*time.Millisecond)
		defer e.Close()
		time.Sleep(20 * time.Millisecond) // the sampler's reading: no request in its wait
		synctest.Wait()
		if n := reads.Load(); n != 2 {
			t.Fatalf("%d readings after one Interval, want 2", n)
		}

		// A surge at a load that turns to 1: the 8th request admitted is due to read it, and takes the reading.
		load.Set(1)
		for i := range dueMinRequests {
			if !e.Admit(false) {
				t.Fatalf("request %d rejected before the reading was due", i+1)
			}
		}
		if n := reads.Load(); n != 3 {
			t.Fatalf("%d readings after the 8th request, want 3: the request did not take the reading due", n)
		}
		if e.Admit(false) {
			t.Fatal("the request after the reading was admitted at load 1")
		}
		// The request woke the sampler to take up the new wait; a request that finds it reading leaves the
		// reading to it (see overdue), so the counts below start once it waits again.
		synctest.Wait()

		// Critical requests make no reading due: their count is not the ordinary one.
		load.Set(0)
		for range 2 * dueMinRequests {
			e.Admit(true)
		}
		if n := reads.Load(); n != 3 {
			t.Fatalf("critical requests took a reading (%d readings)", n)
		}

		// Rejected requests make one due as well: no request was rejected in the last wait, so the 8th since
		// takes it, and the load is 0 again.
		for range dueMinRequests - 2 {
			if e.Admit(false) {
				t.Fatal("admitted at load 1 before the next reading was due")
			}
		}
		if n := reads.Load(); n != 3 {
			t.Fatalf("%d readings before the 8th rejection, want 3", n)
		}
		if e.Admit(false); reads.Load() != 4 {
			t.Fatalf("%d readings after the 8th rejection, want 4", reads.Load())
		}
		if !e.Admit(false) {
			t.Fatal("rejected after the reading of load 0")
		}

		// The sampler, woken to take up the request's wait, does not read again at once.
		synctest.Wait()
		if n := reads.Load(); n != 4 {
			t.Fatalf("the sampler read again right after a request's reading (%d readings)", n)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if n := reads.Load(); n != 5 {
			t.Fatalf("%d readings an Interval later, want 5", n)
		}

		// After Close no request reads.
		_ = e.Close()
		before := reads.Load()
		for range 100 {
			e.Admit(false)
		}
		if n := reads.Load(); n != before {
			t.Fatalf("requests took %d readings after Close", n-before)
		}
	})
}
