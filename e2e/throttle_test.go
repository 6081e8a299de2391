package e2e

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/promserver"
	"github.com/fiberguard/fiberguard/throttle"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
)

// TestThrottleFollowsRealPrometheus steers two throttles with a real Prometheus server scraping a gauge every
// second. One uses `busy > 0.5` (empty when false) and fails closed, the other `busy > bool 0.5` (0 when false)
// and fails open. Both sit in front of a saturated handler:
//   - gauge 0: neither query fires and the windows grow to their maximum;
//   - gauge 1: both fire and each evaluation halves the window, down to the minimum;
//   - gauge 0 again: the windows grow;
//   - Prometheus stopped: the last value is kept for the staleness period, then the fail-closed throttle backs
//     off to its minimum while the fail-open one keeps its window.
func TestThrottleFollowsRealPrometheus(t *testing.T) {
	const (
		windowMin, windowMax = 2, 64
		interval             = time.Second
		staleness            = 5 * time.Second
		phaseTimeout         = 45 * time.Second
	)

	// The backend's metrics: the gauge the queries read, scraped from a real HTTP /metrics.
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

	prom := promserver.Start(t, promserver.Config{Targets: []string{ln.Addr().String()}, ScrapeInterval: time.Second})

	newThrottle := func(name, query string, mode throttle.FailMode) *throttle.Throttler {
		th := throttle.NewThrottler(throttle.Config{
			Name: name, DisableMetrics: true,
			PrometheusURL: prom.URL(),
			Signals:       []throttle.Signal{{Name: "backend_busy", Query: query}},
			Interval:      interval, Timeout: interval, Staleness: staleness, FailMode: mode,
			WindowMin: windowMin, WindowMax: windowMax,
		})
		t.Cleanup(func() { _ = th.Close() })
		return th
	}
	closed := newThrottle("closed", "fiberguard_e2e_backend_busy > 0.5", throttle.FailClosed)
	open := newThrottle("open", "fiberguard_e2e_backend_busy > bool 0.5", throttle.FailOpen)

	// Saturating load: more workers than the largest window, each request holding its slot for 1 ms.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, th := range []*throttle.Throttler{closed, open} {
		app := fiber.New()
		app.Use(th.Handler())
		app.Get("/", func(c *fiber.Ctx) error {
			time.Sleep(time.Millisecond)
			return c.SendStatus(fiber.StatusOK)
		})
		h := app.Handler()
		for range 2 * windowMax {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rc := &fasthttp.RequestCtx{}
				rc.Request.SetRequestURI("/")
				for ctx.Err() == nil {
					rc.Response.Reset()
					h(rc)
					if rc.Response.StatusCode() != fiber.StatusOK {
						time.Sleep(time.Millisecond) // rejected: back off a little instead of spinning
					}
				}
			}()
		}
	}

	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(phaseTimeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached within %v\nfail-closed: %+v\nfail-open: %+v", what, phaseTimeout, closed.Snapshot(), open.Snapshot())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	sig := func(th *throttle.Throttler) throttle.SignalStatus { return th.Snapshot().Signals[0] }

	// Phase 1: not firing. `> 0.5` gives an empty vector (no data), `> bool 0.5` a 0 sample (false).
	busy.Set(0)
	// The windows can reach the maximum before the first evaluation returns on a busy machine (no verdict yet
	// counts as not firing), so wait for the verdicts as well.
	waitUntil("windows grow to the maximum while nothing fires, `busy > 0.5` reading no_data and `busy > bool 0.5` false", func() bool {
		return closed.Window() == windowMax && open.Window() == windowMax &&
			sig(closed).Verdict == "no_data" && sig(open).Verdict == "false"
	})
	if sig(closed).Firing || sig(open).Firing {
		t.Fatalf("a signal fires with busy=0: %+v / %+v", sig(closed), sig(open))
	}

	// Phase 2: firing. Each evaluation halves the window once; growth is held in between.
	busy.Set(1)
	ths := []*throttle.Throttler{closed, open}
	prev := []int{windowMax, windowMax}
	halvings := []int{0, 0}
	baseBackoffs := []uint64{sig(closed).Backoffs, sig(open).Backoffs}
	waitUntil("windows halve to the minimum while the query fires", func() bool {
		done := true
		for i, th := range ths {
			w := th.Window()
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
		s := sig(th)
		// 64 -> 2 is 5 halvings, and no evaluation halved more than once: at least 5 firing evaluations.
		if halvings[i] != 5 || s.Backoffs-baseBackoffs[i] < 5 || !s.Firing || s.Verdict != "firing" {
			t.Fatalf("throttle %d: %d halvings, %d backoffs, signal %+v", i, halvings[i], s.Backoffs-baseBackoffs[i], s)
		}
	}

	// Phase 3: cleared. The windows grow again.
	busy.Set(0)
	waitUntil("windows grow once the query stops firing", func() bool {
		return closed.Window() >= 16 && open.Window() >= 16 && !sig(closed).Firing && !sig(open).Firing
	})

	// Phase 4: Prometheus goes away. The last value (not firing) is kept for the staleness period, then the
	// fail mode decides.
	waitUntil("windows back at the maximum", func() bool { return closed.Window() == windowMax && open.Window() == windowMax })
	lastOK := *sig(closed).LastSuccess
	prom.Stop()
	stopped := time.Now()
	waitUntil("a failed evaluation", func() bool { return sig(closed).Errors > 0 && sig(open).Errors > 0 })
	if s := sig(closed); time.Since(lastOK) < staleness-interval && (!s.Held || s.Stale || s.Firing) {
		t.Fatalf("fail-closed signal right after Prometheus stopped: %+v, want the last value (not firing) held", s)
	}
	waitUntil("fail-closed throttle backs off once the signal is stale", func() bool {
		return sig(closed).Stale && sig(closed).Firing && closed.Window() == windowMin
	})
	if took := time.Since(stopped); took < staleness-3*interval {
		t.Fatalf("fail mode took over %v after Prometheus stopped, before the %v staleness period", took, staleness)
	}
	if s := sig(closed); s.LastSuccess.Sub(lastOK) > 2*interval+time.Second {
		t.Fatalf("a success recorded after Prometheus stopped: last success %v, before the stop %v", s.LastSuccess, lastOK)
	}
	waitUntil("fail-open signal goes stale", func() bool { return sig(open).Stale })
	if s := open.Snapshot(); s.Signals[0].Firing || s.Window != windowMax {
		t.Fatalf("fail-open throttle with Prometheus down: %+v, want not firing and the window kept at %d", s, windowMax)
	}
}
