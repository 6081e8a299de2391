package scenario

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestSummary(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Second)
	at := func(offset time.Duration, code uint16, latency time.Duration, msg string) *vegeta.Result {
		return &vegeta.Result{Timestamp: start.Add(offset), Code: code, Latency: latency, Error: msg}
	}
	s := summary{start: start, end: end}
	for i := range 100 {
		s.add(at(0, 200, time.Duration(i+1)*time.Millisecond, "")) // 1..100 ms, all finished in the window
	}
	s.add(at(900*time.Millisecond, 200, 500*time.Millisecond, ""))                      // finished after the window: not goodput
	s.add(at(300*time.Millisecond, 503, 2*time.Millisecond, "503 Service Unavailable")) // the last shed
	s.add(at(0, 503, time.Millisecond, "503 Service Unavailable"))                      // the first
	s.add(at(0, 0, 10*time.Second, `Get "http://127.0.0.1:1/work": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`))
	s.add(at(0, 0, 10*time.Second, `Get "http://127.0.0.1:1/work": net/http: request canceled (Client.Timeout exceeded while reading body)`))
	s.add(at(0, 0, time.Second, `Get "http://127.0.0.1:1/work": dial tcp 127.0.0.1:1: i/o timeout`))
	s.add(at(0, 0, time.Millisecond, `Get "http://127.0.0.1:1/work": dial tcp 127.0.0.1:1: connect: connection refused`))
	s.add(at(0, 500, time.Millisecond, "500 Internal Server Error"))

	got := s.outcome(108, time.Second)
	want := Outcome{Offered: 108, Goodput: 100, Total: 108, OK: 101, Shed: 2, Timeouts: 3, Errors: 2,
		P50: 51 * time.Millisecond, P99: 100 * time.Millisecond, FirstShed: time.Millisecond,
		LastShed: 302 * time.Millisecond}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if f := got.TimeoutFrac(); f != 3.0/108 {
		t.Errorf("TimeoutFrac %v, want %v", f, 3.0/108)
	}
}

func TestSummaryEmpty(t *testing.T) {
	var s summary
	got := s.outcome(10, time.Second)
	if got.P50 != 0 || got.P99 != 0 || got.ShedFrac() != 0 || got.TimeoutFrac() != 0 || got.ErrFrac() != 0 {
		t.Fatalf("an attack without results: %+v", got)
	}
}

// TestAttackCountsTimeouts drives a real server with real vegeta: the requests it never answers must be counted
// as timeouts, apart from the 503s and the 200s.
func TestAttackCountsTimeouts(t *testing.T) {
	var n, ok, shed, held atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			ok.Add(1)
		case 1:
			shed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			held.Add(1)
			<-release // answered only after the client gave up
		}
	}))
	defer srv.Close()
	defer close(release) // runs before srv.Close, which waits for the handlers

	got := Attack(srv.URL, 30, time.Second, 500*time.Millisecond)
	if got.Total == 0 || int64(got.Total) != n.Load() {
		t.Fatalf("%d results for %d requests served", got.Total, n.Load())
	}
	if int64(got.OK) != ok.Load() || int64(got.Shed) != shed.Load() || int64(got.Timeouts) != held.Load() || got.Errors != 0 {
		t.Fatalf("got %+v; server: %d ok, %d shed, %d held", got, ok.Load(), shed.Load(), held.Load())
	}
}

// TestAttackAfterSplitsOnset drives a real server that sheds everything for its first second and then serves
// everything: AttackAfter must put the requests sent in the warm-up in onset and the rest in steady, each part
// with its own counts, rate and goodput.
func TestAttackAfterSplitsOnset(t *testing.T) {
	const rate = 50
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// The first second's worth of requests is shed, counted rather than timed, so that a stall of the
		// machine between the client's clock and the server's does not move the boundary.
		if seen.Add(1) <= rate {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	onset, steady := AttackAfter(srv.URL, rate, time.Second, 2*time.Second, time.Second)
	// A request sent late (the client stalled) or overtaken near the boundary may fall on the other side.
	const slack = 5
	if onset.Total < rate-slack || onset.Total > rate+slack || onset.Shed < onset.Total-slack {
		t.Errorf("onset (the first second): %+v, want ~%d requests, all shed", onset, rate)
	}
	if steady.Total < 2*rate-slack || steady.Total > 2*rate+slack || steady.OK < steady.Total-slack || steady.Shed > slack {
		t.Errorf("steady (the 2 s after): %+v, want ~%d requests, all served", steady, 2*rate)
	}
	if steady.Goodput < rate-slack || steady.Goodput > rate+1 {
		t.Errorf("steady goodput %v/s, want ~%d/s (its 200s over its own 2 s)", steady.Goodput, rate)
	}
	if onset.Offered != rate || steady.Offered != rate {
		t.Errorf("offered %v and %v, want %d", onset.Offered, steady.Offered, rate)
	}
}

func TestAttackAfterWithoutWarmUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	onset, steady := AttackAfter(srv.URL, 40, 0, time.Second, time.Second)
	if onset != (Outcome{Offered: 40}) {
		t.Errorf("onset of a zero warm-up: %+v, want nothing sent", onset)
	}
	if steady.Total < 38 || steady.OK != steady.Total {
		t.Errorf("steady: %+v, want ~40 requests served", steady)
	}
}

func TestStepPacer(t *testing.T) {
	sp := stepPacer{{Rate: 10, D: time.Second}, {Rate: 0, D: time.Second}, {Rate: 100, D: time.Second}}
	for _, tc := range []struct {
		elapsed time.Duration
		hits    uint64
		wait    time.Duration
		stop    bool
		rate    float64
	}{
		{0, 0, 100 * time.Millisecond, false, 10},                     // the first hit is due after 1/10 s
		{150 * time.Millisecond, 0, 0, false, 10},                     // behind: at once
		{150 * time.Millisecond, 1, 50 * time.Millisecond, false, 10}, // the second at 200 ms
		{time.Second, 10, time.Second, false, 0},                      // a silent step: wait for the next one
		{1500 * time.Millisecond, 10, 500 * time.Millisecond, false, 0},
		{2 * time.Second, 10, 10 * time.Millisecond, false, 100},
		{2500 * time.Millisecond, 30, 0, false, 100}, // 10 + 50 due
		{3 * time.Second, 110, 0, true, 0},
	} {
		wait, stop := sp.Pace(tc.elapsed, tc.hits)
		if stop != tc.stop || (!stop && (wait-tc.wait).Abs() > time.Microsecond) {
			t.Errorf("Pace(%v, %d) = %v, %v; want %v, %v", tc.elapsed, tc.hits, wait, stop, tc.wait, tc.stop)
		}
		if r := sp.Rate(tc.elapsed); r != tc.rate {
			t.Errorf("Rate(%v) = %v, want %v", tc.elapsed, r, tc.rate)
		}
	}
}

// TestAttackStepsSplitsSteps drives a real server at 20/s then 100/s: each step's requests land in its own part,
// and the first 503 of the second step, answered as soon as its requests come, is timed from the step.
func TestAttackStepsSplitsSteps(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) > 25 { // shed from the second step on
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	parts := AttackSteps(srv.URL, []Step{{20, time.Second}, {100, time.Second}}, time.Second)
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2", len(parts))
	}
	if p := parts[0]; p.Total < 18 || p.Total > 22 || p.Offered != 20 {
		t.Errorf("first step: %+v, want ~20 requests", p)
	}
	if p := parts[1]; p.Total < 95 || p.Total > 105 || p.Offered != 100 || p.Shed < 70 {
		t.Errorf("second step: %+v, want ~100 requests, most shed", p)
	}
	if fs := parts[1].FirstShed; fs <= 0 || fs > 200*time.Millisecond {
		t.Errorf("first shed %v after the step, want within 200 ms", fs)
	}
}
