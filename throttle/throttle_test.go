package throttle

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"
)

// do runs one GET through h with a hand-built request context, as fasthttp's server would.
func do(h fasthttp.RequestHandler, path string) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI(path)
	h(ctx)
	return ctx
}

// blockingApp serves /block until release is closed, telling entered when a request is inside the handler.
func blockingApp(mw fiber.Handler, entered chan<- struct{}, release <-chan struct{}) *fiber.App {
	app := fiber.New()
	app.Use(mw)
	app.Get("/block", func(c *fiber.Ctx) error {
		entered <- struct{}{}
		<-release
		return c.SendString("ok")
	})
	app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/health", func(c *fiber.Ctx) error { return c.SendString("healthy") })
	app.Get("/panic", func(c *fiber.Ctx) error { panic("handler bug") })
	app.Get("/error", func(c *fiber.Ctx) error { return errors.New("handler error") })
	return app
}

// occupied serves a blockingApp behind th with one request parked in /block; release lets it finish and waits.
func occupied(th *Throttler) (h fasthttp.RequestHandler, release func()) {
	entered, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	h = blockingApp(th.Handler(), entered, unblock).Handler()
	go func() { defer close(done); do(h, "/block") }()
	<-entered
	return h, func() { close(unblock); <-done }
}

func TestAdmissionRejectsBeyondTheWindow(t *testing.T) {
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 2, DisableMetrics: true})
	defer th.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	h := blockingApp(th.Handler(), entered, release).Handler()

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = do(h, "/block").Response.StatusCode()
		}()
		<-entered
	}
	if th.Snapshot().InFlight != 2 {
		t.Fatalf("in flight %d with two requests inside, want 2", th.Snapshot().InFlight)
	}

	rej := do(h, "/ok")
	if rej.Response.StatusCode() != fiber.StatusServiceUnavailable {
		t.Fatalf("third request: status %d, want 503", rej.Response.StatusCode())
	}
	if got := string(rej.Response.Header.Peek(fiber.HeaderRetryAfter)); got != "1" {
		t.Fatalf("Retry-After %q, want \"1\"", got)
	}

	close(release)
	wg.Wait()
	for i, c := range codes {
		if c != fiber.StatusOK {
			t.Fatalf("admitted request %d: status %d", i, c)
		}
	}
	if got := do(h, "/ok").Response.StatusCode(); got != fiber.StatusOK {
		t.Fatalf("request after the window emptied: status %d", got)
	}
	s := th.Snapshot()
	if s.InFlight != 0 || s.Admitted != 3 || s.Rejected != 1 {
		t.Fatalf("snapshot %+v, want 0 in flight, 3 admitted, 1 rejected", s)
	}
}

func TestRejectionIsConfigurable(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		wantStatus int
		wantRetry  string
		wantBody   string
	}{
		{"status code", Config{StatusCode: fiber.StatusTooManyRequests}, 429, "1", ""},
		{"retry-after rounds up", Config{RetryAfter: 1500 * time.Millisecond}, 503, "2", ""},
		{"negative retry-after omits the header", Config{RetryAfter: -1}, 503, "", ""},
		{"handler", Config{LimitReached: func(c *fiber.Ctx) error {
			return c.Status(fiber.StatusTeapot).SendString("busy")
		}}, fiber.StatusTeapot, "", "busy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.WindowMin, cfg.WindowMax, cfg.DisableMetrics = 1, 1, true
			th := NewThrottler(cfg)
			defer th.Close()
			h, release := occupied(th)
			rej := do(h, "/ok")
			release()
			if rej.Response.StatusCode() != tt.wantStatus {
				t.Errorf("status %d, want %d", rej.Response.StatusCode(), tt.wantStatus)
			}
			if got := string(rej.Response.Header.Peek(fiber.HeaderRetryAfter)); got != tt.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tt.wantRetry)
			}
			if got := string(rej.Response.Body()); got != tt.wantBody {
				t.Errorf("body %q, want %q", got, tt.wantBody)
			}
		})
	}
}

func TestSlotReleasedOnPanicAndError(t *testing.T) {
	th := NewThrottler(Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
	defer th.Close()
	h := blockingApp(th.Handler(), nil, nil).Handler()

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the handler's panic did not propagate")
			}
		}()
		do(h, "/panic")
	}()
	if n := th.Snapshot().InFlight; n != 0 {
		t.Fatalf("in flight %d after a panicking handler, want 0", n)
	}
	if got := do(h, "/error").Response.StatusCode(); got != fiber.StatusInternalServerError {
		t.Fatalf("erroring handler: status %d, want 500", got)
	}
	if n := th.Snapshot().InFlight; n != 0 {
		t.Fatalf("in flight %d after an erroring handler, want 0", n)
	}
	if got := do(h, "/ok").Response.StatusCode(); got != fiber.StatusOK {
		t.Fatalf("window of 1 after a panic and an error: status %d, want 200", got)
	}
}

func TestNextSkipsTheWindow(t *testing.T) {
	th := NewThrottler(Config{
		WindowMin: 1, WindowMax: 1, DisableMetrics: true,
		Next: func(c *fiber.Ctx) bool { return c.Path() == "/health" },
	})
	defer th.Close()
	h, release := occupied(th)
	health := do(h, "/health").Response.StatusCode()
	other := do(h, "/ok").Response.StatusCode()
	release()
	if health != fiber.StatusOK || other != fiber.StatusServiceUnavailable {
		t.Fatalf("full window: /health %d (want 200, skipped), /ok %d (want 503)", health, other)
	}
}

func TestNewPanicsOnBadConfig(t *testing.T) {
	fn := func(context.Context) (bool, error) { return false, nil }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"min < 1", Config{WindowMin: -1}, "Config.WindowMin"},
		{"min > max", Config{WindowMin: 20, WindowMax: 10}, "Config.WindowMax must be >= Config.WindowMin"},
		{"max too large", Config{WindowMax: MaxWindow + 1}, "Config.WindowMax must be <="},
		{"empty query", Config{PrometheusURL: "http://127.0.0.1:9090", Queries: []string{"up", " "}}, "Config.Queries[1]"},
		{"unparsable URL", Config{PrometheusURL: "http://[::1", Queries: []string{"up"}}, "Config.PrometheusURL"},
		{"URL without scheme", Config{PrometheusURL: "127.0.0.1:9090", Queries: []string{"up"}}, "Config.PrometheusURL"},
		{"queries without URL", Config{Queries: []string{"up"}}, "Config.PrometheusURL must be set"},
		{"signal query without URL", Config{Signals: []Signal{{Query: "up"}}}, "Config.PrometheusURL must be set when Config.Signals[0].Query"},
		{"signal with neither", Config{Signals: []Signal{{Func: fn}, {Name: "x"}}}, "Config.Signals[1].Query"},
		{"signal with both", Config{PrometheusURL: "http://p:9090", Signals: []Signal{{Query: "up", Func: fn}}}, "Config.Signals[0] must set only one"},
		{"duplicate names", Config{Signals: []Signal{{Name: "q", Func: fn}, {Name: "q", Func: fn}}}, "\"q\" is used twice"},
		{"negative interval", Config{Interval: -time.Second}, "Config.Interval"},
		{"negative timeout", Config{Timeout: -time.Second}, "Config.Timeout"},
		{"negative staleness", Config{Staleness: -time.Second}, "Config.Staleness"},
		{"signal interval", Config{Signals: []Signal{{Func: fn, Interval: -1}}}, "Config.Signals[0].Interval"},
		{"fail mode", Config{FailMode: 7}, "Config.FailMode"},
		{"status", Config{StatusCode: 42}, "Config.StatusCode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.HasPrefix(msg, "throttle: ") || !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %v, want a message naming %q", r, tt.want)
				}
			}()
			cfg := tt.cfg
			cfg.DisableMetrics = true
			New(cfg)
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg := configDefault()
	if cfg.WindowMin != 10 || cfg.WindowMax != 1000 || cfg.Interval != 15*time.Second || cfg.StatusCode != 503 {
		t.Fatalf("defaults %+v", cfg)
	}
	if c := configDefault(Config{WindowMax: 4}); c.WindowMin != 4 {
		t.Errorf("WindowMax 4 alone: WindowMin %d, want 4", c.WindowMin)
	}
	if c := configDefault(Config{WindowMin: 5000}); c.WindowMax != 5000 {
		t.Errorf("WindowMin 5000 alone: WindowMax %d, want 5000", c.WindowMax)
	}
	sigs := signalsOf(configDefault(Config{
		PrometheusURL: "http://p:9090",
		Queries:       []string{"a > 1"},
		Signals:       []Signal{{Query: "b > 1", Interval: 2 * time.Second}, {Name: "queue", Func: func(context.Context) (bool, error) { return false, nil }}},
	}))
	want := []struct {
		name              string
		interval, timeout time.Duration
	}{{"query_0", 15 * time.Second, 5 * time.Second}, {"signal_0", 2 * time.Second, 2 * time.Second}, {"queue", 15 * time.Second, 5 * time.Second}}
	for i, w := range want {
		if sigs[i].Name != w.name || sigs[i].Interval != w.interval || sigs[i].Timeout != w.timeout {
			t.Errorf("signal %d: %s every %v, timeout %v; want %s, %v, %v", i, sigs[i].Name, sigs[i].Interval, sigs[i].Timeout, w.name, w.interval, w.timeout)
		}
	}
	if got := staleness(Config{}, sigs[1]); got != 8*time.Second {
		t.Errorf("default staleness for a 2s signal: %v, want 8s", got)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	fires := make(chan struct{})
	th := NewThrottler(Config{
		Name: "api", Registerer: reg, WindowMin: 3, WindowMax: 9,
		Signals: []Signal{{Name: "queue", Interval: time.Hour, Func: func(context.Context) (bool, error) {
			defer close(fires)
			return true, nil
		}}},
	})
	defer th.Close()
	<-fires
	waitFor(t, func() bool { return th.Snapshot().Signals[0].Evaluations == 1 })

	h := blockingApp(th.Handler(), nil, nil).Handler()
	do(h, "/ok")

	// A second instance on the same registry under the same name must not panic; its metrics are skipped.
	second := NewThrottler(Config{Name: "api", Registerer: reg})
	second.Close()

	got := gather(t, reg)
	for name, want := range map[string]float64{
		`fiberguard_throttle_window{throttle="api"}`:                                                   3,
		`fiberguard_throttle_window_bound{bound="max",throttle="api"}`:                                 9,
		`fiberguard_throttle_in_flight{throttle="api"}`:                                                0,
		`fiberguard_throttle_requests_total{decision="admitted",throttle="api"}`:                       1,
		`fiberguard_throttle_requests_total{decision="rejected",throttle="api"}`:                       0,
		`fiberguard_throttle_signal_firing{signal="queue",throttle="api"}`:                             1,
		`fiberguard_throttle_signal_evaluations_total{signal="queue",throttle="api",verdict="firing"}`: 1,
		`fiberguard_throttle_query_errors_total{signal="queue",throttle="api"}`:                        0,
		`fiberguard_throttle_backoffs_total{signal="queue",throttle="api"}`:                            1,
		`fiberguard_throttle_query_duration_seconds_count{signal="queue",throttle="api"}`:              1,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", name, v, ok, want)
		}
	}

	th.Close()
	if n := len(gather(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close unregistered the metrics", n)
	}
}

// gather flattens a registry into "name{labels}" -> value (histograms as _count).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			var v float64
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				name += "_count"
				v = float64(m.GetHistogram().GetSampleCount())
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// waitFor polls cond for up to 10 s: for state set by goroutines running on the real clock.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSnapshotJSON(t *testing.T) {
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 4, DisableMetrics: true})
	defer th.Close()
	b, err := json.Marshal(th.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window":2`, `"window_min":2`, `"window_max":4`, `"in_flight":0`, `"signals":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("snapshot JSON %s lacks %s", b, want)
		}
	}
	if th.Window() != 2 {
		t.Errorf("Window() = %d", th.Window())
	}
}

// TestSnapshotJSONLastSuccess: before a signal's first success its last_success is null, not year 1; after it,
// the instant of that success.
func TestSnapshotJSONLastSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ok atomic.Bool
		th := NewThrottler(Config{DisableMetrics: true, Signals: []Signal{{Name: "s", Interval: 10 * time.Second,
			Func: func(context.Context) (bool, error) {
				if !ok.Load() {
					return false, errors.New("not ready")
				}
				return false, nil
			}}}})
		defer th.Close()
		signalJSON := func() map[string]any {
			t.Helper()
			b, err := json.Marshal(th.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			var s struct{ Signals []map[string]any }
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			return s.Signals[0]
		}

		if v, present := signalJSON()["last_success"]; !present || v != nil {
			t.Fatalf("last_success before any evaluation: %v (present %t), want null", v, present)
		}
		synctest.Wait() // the first evaluation fails
		if sig := signalJSON(); sig["evaluations"] != 1.0 || sig["last_success"] != nil {
			t.Fatalf("after a failed evaluation: %v, want last_success null", sig)
		}

		ok.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := time.Now().Format(time.RFC3339Nano) // the fake clock stands still once every goroutine waits
		if got := signalJSON()["last_success"]; got != want {
			t.Fatalf("last_success after a success at %s: %v", want, got)
		}

		ok.Store(false) // a later failure keeps the instant of the last success
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := signalJSON()["last_success"]; got != want {
			t.Fatalf("last_success after a later failure: %v, want %s", got, want)
		}
	})
}

func TestNewStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 100)
	h := New(Config{Context: ctx, DisableMetrics: true, Signals: []Signal{{Interval: time.Millisecond, Func: func(context.Context) (bool, error) {
		select {
		case calls <- struct{}{}:
		default:
		}
		return false, nil
	}}}})
	if h == nil {
		t.Fatal("New returned nil")
	}
	<-calls
	cancel()
	// goleak in TestMain fails the package if the signal goroutine outlives the cancelled context.
}
