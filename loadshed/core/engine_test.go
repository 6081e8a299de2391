package core

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// testDefaults are the adapters' ConfigDefault values, for engines built here.
// testDefaults is the default config with a stand-in OnReject (an engine never calls it).
var testDefaults = Defaults[any, any]("reject")

// newTestEngine builds an Engine from cfg filled with the defaults, on a private registry, with smoothing off so
// the load is the signal's.
func newTestEngine(t *testing.T, cfg testConfig) (*Engine, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	e := NewEngine(cfg.WithDefaults(testDefaults), nil)
	t.Cleanup(func() { _ = e.Close() })
	return e, reg
}

func TestAdmitCountsEachPriority(t *testing.T) {
	// The default bands: ordinary [0.90, 0.95], critical [0.98, 1.0]. Loads outside both bands decide the same
	// way on every request, so the counts are exact.
	tests := []struct {
		load             float64
		normal, critical bool // Admit's answer
	}{
		{load: 0.5, normal: true, critical: true},
		{load: 0.96, normal: false, critical: true},
		{load: 1.0, normal: false, critical: false},
	}
	for _, tt := range tests {
		e, _ := newTestEngine(t, testConfig{Signal: coretest.NewFixedLoad(tt.load), Interval: time.Hour})
		for range 3 {
			if got := e.Admit(false); got != tt.normal {
				t.Errorf("load %v: Admit(false) = %v, want %v", tt.load, got, tt.normal)
			}
		}
		if got := e.Admit(true); got != tt.critical {
			t.Errorf("load %v: Admit(true) = %v, want %v", tt.load, got, tt.critical)
		}
		st := e.Status()
		count := func(ok bool, n uint64) (admitted, rejected uint64) {
			if ok {
				return n, 0
			}
			return 0, n
		}
		wa, wr := count(tt.normal, 3)
		ca, cr := count(tt.critical, 1)
		if st.Admitted != wa || st.Rejected != wr || st.CriticalAdmitted != ca || st.CriticalRejected != cr {
			t.Errorf("load %v: counters %+v, want admitted %d rejected %d critical %d/%d", tt.load, st, wa, wr, ca, cr)
		}
	}
}

func TestAdmitFollowsANewReading(t *testing.T) {
	load := coretest.NewFixedLoad(0.96)
	e, _ := newTestEngine(t, testConfig{Signal: load, Interval: time.Hour}) // the test takes the readings itself
	if e.Admit(false) || !e.Admit(true) {
		t.Fatal("at 0.96 an ordinary request must be rejected and a critical one admitted")
	}
	load.Set(1.0)
	e.Sample()
	if e.Admit(true) {
		t.Fatal("at 1.0 a critical request must be rejected")
	}
	if st := e.Status(); st.Load != 1 || st.CriticalProbability != 1 {
		t.Fatalf("status after Sample %+v", st)
	}
}

func TestAdmitDryRunCountsButAdmits(t *testing.T) {
	e, _ := newTestEngine(t, testConfig{Signal: coretest.NewFixedLoad(1), DryRun: true})
	for range 5 {
		if !e.Admit(false) {
			t.Fatal("dry run rejected a request")
		}
	}
	if st := e.Status(); st.Rejected != 5 || st.Admitted != 0 || !st.DryRun {
		t.Fatalf("status %+v", st)
	}
}

func TestAdmitInTheBand(t *testing.T) {
	// p = 0.5: Admit spreads the rejections evenly (decisions.spread), so after every request the count rejected
	// stays within a few of half the requests; coins would stray by √n/2, about 30 after 4000.
	e, _ := newTestEngine(t, testConfig{Signal: coretest.NewFixedLoad(0.925)})
	rejected, worst := 0, 0.0
	const n = 4000
	for i := 1; i <= n; i++ {
		if !e.Admit(false) {
			rejected++
		}
		worst = max(worst, math.Abs(float64(rejected)-float64(i)/2))
	}
	if worst > 8 {
		t.Fatalf("the count rejected strayed %.1f from half the requests", worst)
	}
	if st := e.Status(); int(st.Rejected) != rejected || int(st.Admitted) != n-rejected {
		t.Fatalf("counters %+v disagree with %d rejected", st, rejected)
	}
}

func TestAdmitSpreadsEachPriorityOnItsOwn(t *testing.T) {
	// In the critical band (0.99: ordinary requests all shed, critical ones at p = 0.5) the critical requests
	// keep their own credit: interleaved with rejected ordinary ones they are still admitted half the time.
	e, _ := newTestEngine(t, testConfig{Signal: coretest.NewFixedLoad(0.99)})
	admitted := 0
	const n = 2000
	for range n {
		if e.Admit(false) {
			t.Fatal("an ordinary request was admitted above Upper")
		}
		if e.Admit(true) {
			admitted++
		}
	}
	if admitted < n/2-8 || admitted > n/2+8 {
		t.Fatalf("admitted %d of %d critical requests at p = 0.5", admitted, n)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string // "" means nil
	}{
		{0, "1"},
		{1, "1"},
		{time.Second - 1, "1"},
		{time.Second, "1"},
		{time.Second + 1, "2"},
		{90 * time.Second, "90"},
		{math.MaxInt64, "9223372037"}, // no overflow on the way up
		{-1, ""},
		{math.MinInt64, ""},
	}
	for _, tt := range tests {
		if got := retryAfterHeader(tt.d); string(got) != tt.want || (got == nil) != (tt.want == "") {
			t.Errorf("retryAfterHeader(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestHeaderValues(t *testing.T) {
	tests := []struct {
		cfg                    testConfig
		retryAfter, rejectedBy string // retryAfter "" means none
	}{
		{testConfig{}, "1", "loadshed/default"},
		{testConfig{RetryAfter: 1500 * time.Millisecond, Name: "api"}, "2", "loadshed/api"},
		{testConfig{RetryAfter: -time.Second, Name: "edge"}, "", "loadshed/edge"},
	}
	for _, tt := range tests {
		tt.cfg.Signal, tt.cfg.DisableMetrics = coretest.NewFixedLoad(0), true
		e := NewEngine(tt.cfg.WithDefaults(testDefaults), nil)
		if got := e.RetryAfter(); string(got) != tt.retryAfter || (got == nil) != (tt.retryAfter == "") {
			t.Errorf("%+v: RetryAfter() = %q, want %q", tt.cfg, got, tt.retryAfter)
		}
		if got := string(e.RejectedBy()); got != tt.rejectedBy {
			t.Errorf("%+v: RejectedBy() = %q, want %q", tt.cfg, got, tt.rejectedBy)
		}
		_ = e.Close()
	}
}

func TestCloseIsIdempotentAndUnregisters(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := prometheus.NewRegistry()
	e := NewEngine(testConfig{Signal: coretest.NewFixedLoad(1), Smoothing: 1, Interval: time.Millisecond, Registerer: reg}.WithDefaults(testDefaults), nil)
	var closers sync.WaitGroup
	for range 3 { // at once: each waits for the one that stops the sampler
		closers.Go(func() {
			if err := e.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
	closers.Wait()
	if err := e.Close(); err != nil {
		t.Fatalf("Close after Close = %v", err)
	}
	if e.Admit(false) {
		t.Fatal("after Close a decision at load 1 admitted")
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Fatalf("after Close the registry still gathers %d families (%v)", len(mfs), err)
	}
}

// queueing returns an Engine over a Controller whose latency reads a queue while its CPU has room: the share stays
// 0 and only the in-flight limit sheds.
func queueing(t *testing.T, dryRun bool) (*Engine, *named) {
	t.Helper()
	l := &named{name: "lat"}
	e, _ := newTestEngine(t, testConfig{Signal: NewController(&named{name: "cpu", load: 0.5}, l, 0), Interval: time.Hour,
		DryRun: dryRun})
	l.load = 2 // from the second reading on
	return e, l
}

func TestAdmitHoldsTheInFlightLimit(t *testing.T) {
	e, lat := queueing(t, false)
	for range 10 {
		if !e.Admit(false) {
			t.Fatal("rejected before any limit")
		}
	}
	e.Sample() // a queue with 10 in flight: the limit is 5
	st := e.Status()
	if st.Limit != 5 || st.InFlight != 10 || st.Probability != 0 {
		t.Fatalf("after a queue with 10 in flight: limit %d, in flight %d, probability %v; want 5, 10, 0",
			st.Limit, st.InFlight, st.Probability)
	}
	if e.Admit(false) {
		t.Fatal("admitted an ordinary request with 10 in flight over a limit of 5")
	}
	for range 6 {
		e.Done()
	}
	if !e.Admit(false) {
		t.Fatal("rejected with 4 in flight under a limit of 5")
	}
	if e.Admit(false) {
		t.Fatal("admitted a sixth request over a limit of 5")
	}
	// A critical request may go to twice the limit.
	for range 5 {
		if !e.Admit(true) {
			t.Fatalf("rejected a critical request with %d in flight, under twice the limit", e.InFlight())
		}
	}
	if e.Admit(true) {
		t.Fatal("admitted a critical request at twice the limit")
	}
	st = e.Status()
	if st.InFlight != 10 || st.Admitted != 11 || st.Rejected != 2 || st.CriticalAdmitted != 5 || st.CriticalRejected != 1 {
		t.Fatalf("counters %+v", st)
	}
	// Without a queue, a reading after rejections with the CPU at half raises the limit; one after none lifts it.
	lat.load = 0
	e.Sample()
	if got := e.Status().Limit; got != 6 {
		t.Fatalf("limit %d after rejections with room, want 6", got)
	}
	e.Sample()
	if got := e.Status().Limit; got != 0 {
		t.Fatalf("limit %d after a reading without rejections, want none", got)
	}
	for range 20 {
		if !e.Admit(false) {
			t.Fatal("rejected with no limit")
		}
	}
}

func TestDryRunCountsTheLimitAndAdmits(t *testing.T) {
	e, _ := queueing(t, true)
	for range 4 {
		e.Admit(false)
	}
	e.Sample() // limit 2
	for range 3 {
		if !e.Admit(false) {
			t.Fatal("dry run rejected a request")
		}
	}
	// The requests dry run lets through over the limit are in flight too, and each one's Done counts.
	if st := e.Status(); st.Limit != 2 || st.Rejected != 3 || st.Admitted != 4 || st.InFlight != 7 {
		t.Fatalf("status %+v; want limit 2, 3 rejected, 4 admitted, 7 in flight", st)
	}
	for range 7 {
		e.Done()
	}
	if n := e.InFlight(); n != 0 {
		t.Fatalf("in flight %d after every Done, want 0", n)
	}
}

func TestInFlightUnderConcurrentRequests(t *testing.T) {
	e, _ := queueing(t, false)
	for range 8 {
		e.Admit(false)
	}
	e.Sample() // limit 4, with 8 in flight
	for range 8 {
		e.Done()
	}
	var wg sync.WaitGroup
	var over sync.Mutex
	most := int64(0)
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if e.Admit(false) {
					n := e.InFlight()
					over.Lock()
					most = max(most, n)
					over.Unlock()
					time.Sleep(50 * time.Microsecond) // a handler: the callers overlap
					e.Done()
				}
			}
		})
	}
	wg.Wait()
	// Callers racing for the last slot can each pass the check: at most one per caller over the limit.
	if most > 4+8 || e.InFlight() != 0 {
		t.Fatalf("most in flight %d (limit 4, 8 callers), %d left in flight; want at most 12 and none", most, e.InFlight())
	}
	st := e.Status()
	if st.Admitted+st.Rejected != 8+8*500 || st.Rejected == 0 {
		t.Fatalf("counters %+v: every request decided, some rejected", st)
	}
}
