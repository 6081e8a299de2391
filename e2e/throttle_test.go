package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/fiberapp"
	"github.com/fiberguard/fiberguard/e2e/internal/promserver"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestThrottleFollowsRealPrometheus steers two throttles with a real Prometheus server scraping a gauge every
// second. One uses `busy > 0.5` (empty when false) and fails closed, the other `busy > bool 0.5` (0 when false)
// and fails open. Both sit in front of a saturated handler:
//   - gauge 0: neither query fires and the windows grow to their maximum;
//   - gauge 1: both fire and each evaluation halves the window, down to the minimum;
//   - gauge 0 again: the windows grow;
//   - Prometheus stopped: the last value is kept for the staleness period, then the fail-closed throttle backs
//     off to its minimum while the fail-open one keeps its window.
//
// It runs on each version's adapter: Fiber v2, Fiber v3 and net/http.
func TestThrottleFollowsRealPrometheus(t *testing.T) {
	fiberapp.Each(t, testThrottleFollowsRealPrometheus)
}

func testThrottleFollowsRealPrometheus(t *testing.T, fv fiberapp.Version) {
	const (
		windowMin, windowMax = 2, 64
		interval             = time.Second
		staleness            = 5 * time.Second
		phaseTimeout         = 45 * time.Second
	)

	busy, prom := startBusyBackend(t)

	newThrottle := func(name, query string, mode throttlecore.FailMode) throttler {
		th := fv.NewThrottler(throttlecore.Config[any, any]{
			Name: name, DisableMetrics: true,
			PrometheusURL: prom.URL(),
			Triggers:      []throttlecore.Trigger{{Name: "backend_busy", Query: query}},
			Interval:      interval, Timeout: interval, Staleness: staleness, FailMode: mode,
			WindowMin: windowMin, WindowMax: windowMax,
		})
		t.Cleanup(func() { _ = th.Close() })
		return th
	}
	closed := newThrottle("closed", "fiberguard_e2e_backend_busy > 0.5", throttlecore.FailClosed)
	open := newThrottle("open", "fiberguard_e2e_backend_busy > bool 0.5", throttlecore.FailOpen)

	saturateThrottles(t, fv, 2*windowMax, closed, open)
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		waitThrottles(t, phaseTimeout, what, cond, closed, open)
	}

	// Phase 1: not firing. `> 0.5` gives an empty vector (no data), `> bool 0.5` a 0 sample (false).
	busy.Set(0)
	// The windows can reach the maximum before the first evaluation returns on a busy machine (no verdict yet
	// counts as not firing), so wait for the verdicts as well.
	waitUntil("windows grow to the maximum while nothing fires, `busy > 0.5` reading no_data and `busy > bool 0.5` false", func() bool {
		return closed.Status().Window == windowMax && open.Status().Window == windowMax &&
			throttleTrigger(closed).Verdict == "no_data" && throttleTrigger(open).Verdict == "false"
	})
	if throttleTrigger(closed).Firing || throttleTrigger(open).Firing {
		t.Fatalf("a trigger fires with busy=0: %+v / %+v", throttleTrigger(closed), throttleTrigger(open))
	}

	// Phase 2: firing. Each evaluation halves the window once; growth is held in between.
	busy.Set(1)
	ths := []throttler{closed, open}
	prev := []int{windowMax, windowMax}
	halvings := []int{0, 0}
	baseBackoffs := []uint64{throttleTrigger(closed).Backoffs, throttleTrigger(open).Backoffs}
	waitUntil("windows halve to the minimum while the query fires", func() bool {
		done := true
		for i, th := range ths {
			w := th.Status().Window
			// Usually one halving between two looks; two evaluations can run back to back when one was slow.
			k := 0
			for x := prev[i]; x > w && x > windowMin; x = max(x/2, windowMin) {
				k++
			}
			if w > prev[i] || (w < prev[i] && max(prev[i]>>k, windowMin) != w) {
				t.Fatalf("throttle %d: window went from %d to %d while firing, want only halvings", i, prev[i], w)
			}
			prev[i], halvings[i] = w, halvings[i]+k
			done = done && w == windowMin
		}
		return done
	})
	for i, th := range ths {
		s := throttleTrigger(th)
		// 64 -> 2 is 5 halvings, and no evaluation halved more than once: at least 5 firing evaluations.
		if halvings[i] != 5 || s.Backoffs-baseBackoffs[i] < 5 || !s.Firing || s.Verdict != "firing" {
			t.Fatalf("throttle %d: %d halvings, %d backoffs, trigger %+v", i, halvings[i], s.Backoffs-baseBackoffs[i], s)
		}
	}

	// Phase 3: cleared. The windows grow again.
	busy.Set(0)
	waitUntil("windows grow once the query stops firing", func() bool {
		return closed.Status().Window >= 16 && open.Status().Window >= 16 && !throttleTrigger(closed).Firing && !throttleTrigger(open).Firing
	})

	// Phase 4: Prometheus goes away. The last value (not firing) is kept for the staleness period, then the
	// fail mode decides.
	waitUntil("windows back at the maximum", func() bool { return closed.Status().Window == windowMax && open.Status().Window == windowMax })
	lastOK := *throttleTrigger(closed).LastSuccess
	prom.Stop()
	stopped := time.Now()
	waitUntil("a failed evaluation", func() bool { return throttleTrigger(closed).Errors > 0 && throttleTrigger(open).Errors > 0 })
	if s := throttleTrigger(closed); time.Since(lastOK) < staleness-interval && (!s.Held || s.Stale || s.Firing) {
		t.Fatalf("fail-closed trigger right after Prometheus stopped: %+v, want the last value (not firing) held", s)
	}
	waitUntil("fail-closed throttle backs off once the trigger is stale", func() bool {
		return throttleTrigger(closed).Stale && throttleTrigger(closed).Firing && closed.Status().Window == windowMin
	})
	if took := time.Since(stopped); took < staleness-3*interval {
		t.Fatalf("fail mode took over %v after Prometheus stopped, before the %v staleness period", took, staleness)
	}
	if s := throttleTrigger(closed); s.LastSuccess.Sub(lastOK) > 2*interval+time.Second {
		t.Fatalf("a success recorded after Prometheus stopped: last success %v, before the stop %v", s.LastSuccess, lastOK)
	}
	waitUntil("fail-open trigger goes stale", func() bool { return throttleTrigger(open).Stale })
	if s := open.Status(); s.Triggers[0].Firing || s.Window != windowMax {
		t.Fatalf("fail-open throttle with Prometheus down: %+v, want not firing and the window kept at %d", s, windowMax)
	}
}

// TestThrottleInvalidQueryWithRealPrometheus runs, under fail-closed and in front of saturated handlers, queries
// that a real Prometheus 2.42 rejects or cannot evaluate:
//   - a syntax error (`busy >`) and a scalar comparison without bool (`1 > 0.5`), which Prometheus answers with
//     400 bad_data, and a range vector (`busy[1m]`): the trigger is invalid and never fires, so the window grows
//     to its maximum and stays there past the staleness period; the status, its JSON and the metrics say so;
//   - a many-to-many match, which Prometheus answers with 422 execution: an error that depends on the data
//     (with no series it would return nothing), so it is transient and fail-closed holds the window at its
//     minimum.
//
// It runs on each version's adapter: Fiber v2, Fiber v3 and net/http.
func TestThrottleInvalidQueryWithRealPrometheus(t *testing.T) {
	fiberapp.Each(t, testThrottleInvalidQueryWithRealPrometheus)
}

func testThrottleInvalidQueryWithRealPrometheus(t *testing.T, fv fiberapp.Version) {
	const (
		windowMin, windowMax = 2, 32
		interval             = 500 * time.Millisecond
		staleness            = time.Second
		phaseTimeout         = 45 * time.Second
	)
	busy, prom := startBusyBackend(t)
	busy.Set(1) // a valid query over the gauge would fire

	reg := prometheus.NewRegistry()
	newThrottle := func(name, query string) throttler {
		th := fv.NewThrottler(throttlecore.Config[any, any]{
			Name: name, Registerer: reg,
			PrometheusURL: prom.URL(),
			Triggers:      []throttlecore.Trigger{{Name: "backend_busy", Query: query}},
			Interval:      interval, Timeout: 5 * time.Second, Staleness: staleness, FailMode: throttlecore.FailClosed,
			WindowMin: windowMin, WindowMax: windowMax,
		})
		t.Cleanup(func() { _ = th.Close() })
		return th
	}
	typo := newThrottle("typo", "fiberguard_e2e_backend_busy >")
	scalar := newThrottle("scalar", "1 > 0.5")
	ranged := newThrottle("range", "fiberguard_e2e_backend_busy[1m]")
	execution := newThrottle("execution", `{__name__=~".+"} * on() {__name__=~".+"}`)
	invalid := []throttler{typo, scalar, ranged}
	all := []throttler{typo, scalar, ranged, execution}
	saturateThrottles(t, fv, 2*windowMax, all...)

	waitThrottles(t, phaseTimeout, "invalid queries: windows at the maximum; 422: stale and fail-closed", func() bool {
		for _, th := range invalid {
			s := throttleTrigger(th)
			if th.Status().Window != windowMax || !s.Invalid || s.Verdict != "invalid" {
				return false
			}
		}
		s := throttleTrigger(execution)
		return s.Stale && s.Firing && s.Verdict == "error"
	}, all...)

	// Well past the staleness period, with evaluations going on, nothing changes.
	before := make([]uint64, len(invalid))
	for i, th := range invalid {
		before[i] = throttleTrigger(th).Evaluations
	}
	time.Sleep(staleness + 3*interval)
	for i, th := range invalid {
		s := th.Status()
		if g := s.Triggers[0]; g.Evaluations < before[i]+2 || !g.Invalid || g.Firing || g.Backoffs != 0 || s.GrowthHeld || s.Window != windowMax {
			t.Fatalf("invalid query %q past staleness: %+v, want evaluated, invalid, never firing, window %d", th.Status().Triggers[0].Name, s, windowMax)
		}
		if g := s.Triggers[0]; !strings.Contains(g.LastError, "bad_data") && !strings.Contains(g.LastError, "matrix") {
			t.Fatalf("invalid query's last error %q names neither bad_data nor the range vector", g.LastError)
		}
	}
	if s := execution.Status(); s.Window != windowMin || s.Triggers[0].Invalid || !strings.Contains(s.Triggers[0].LastError, "execution") {
		t.Fatalf("422 execution error under fail-closed: %+v, want the window at %d and a transient error", s, windowMin)
	}

	// The status page view: the trigger reads invalid, and it has never succeeded.
	b, err := json.Marshal(typo.Status())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"name":"typo","updated_at":"`, `"verdict":"invalid"`, `"invalid":true`, `"firing":false`, `"growth_held":false`, `"last_success":null`, `parse error`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status JSON of the invalid query lacks %s: %s", want, b)
		}
	}

	// The metrics: alert on fiberguard_throttle_trigger_invalid.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauge := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "fiberguard_throttle_trigger_invalid" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					gauge[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	for name, want := range map[string]float64{"typo": 1, "scalar": 1, "range": 1, "execution": 0} {
		if got, ok := gauge[name]; !ok || got != want {
			t.Errorf("fiberguard_throttle_trigger_invalid{name=%q} = %v (present %t), want %v", name, got, ok, want)
		}
	}
}

// startBusyBackend serves a gauge fiberguard_e2e_backend_busy (1 when the backend is overloaded) on a real HTTP
// /metrics and starts a real Prometheus scraping it every second.
func startBusyBackend(t *testing.T) (prometheus.Gauge, *promserver.Server) {
	t.Helper()
	reg := prometheus.NewRegistry()
	busy := prometheus.NewGauge(prometheus.GaugeOpts{Name: "fiberguard_e2e_backend_busy", Help: "1 when the backend is overloaded."})
	reg.MustRegister(busy)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsSrv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go func() { _ = metricsSrv.Serve(ln) }()
	t.Cleanup(func() { _ = metricsSrv.Close() })
	return busy, promserver.Start(t, promserver.Config{Targets: []string{ln.Addr().String()}, ScrapeInterval: time.Second})
}

// throttler is a throttle.Throttler of one version's adapter.
type throttler = fiberapp.Handle[throttlecore.Status]

// saturateThrottles runs workers goroutines per throttle, each sending requests in memory through an app of version
// fv that hold their slot for 1 ms, until the test ends: more load than the largest window admits.
func saturateThrottles(t *testing.T, fv fiberapp.Version, workers int, ths ...throttler) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, th := range ths {
		app := fv.NewApp()
		app.Use(th.Handler())
		app.Get("/", func() string {
			time.Sleep(time.Millisecond)
			return "OK"
		})
		for range workers {
			get := app.InMemory("/")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if get() != http.StatusOK {
						time.Sleep(time.Millisecond) // rejected: back off a little instead of spinning
					}
				}
			}()
		}
	}
}

// waitThrottles polls cond until it holds, failing t with the throttles' statuses after timeout.
func waitThrottles(t *testing.T, timeout time.Duration, what string, cond func() bool, ths ...throttler) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, th := range ths {
				fmt.Fprintf(&b, "\n%+v", th.Status())
			}
			t.Fatalf("%s: not reached within %v%s", what, timeout, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func throttleTrigger(th throttler) throttlecore.TriggerStatus { return th.Status().Triggers[0] }
