package loadshed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

// fixedLoad is a Signal whose reading the test sets.
type fixedLoad struct{ bits atomic.Uint64 }

func newFixedLoad(v float64) *fixedLoad {
	f := &fixedLoad{}
	f.set(v)
	return f
}
func (f *fixedLoad) set(v float64)          { f.bits.Store(math.Float64bits(v)) }
func (f *fixedLoad) Load() (float64, error) { return math.Float64frombits(f.bits.Load()), nil }

// newTestShedder builds a Shedder on a private registry with smoothing off, so the load is the signal's.
func newTestShedder(t *testing.T, cfg Config) (*Shedder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	s := NewShedder(cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s, reg
}

func newApp(s *Shedder) *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(s.Handler())
	app.Get("/*", func(c *fiber.Ctx) error { return c.SendString("ok") })
	return app
}

// response is what a test request got back.
type response struct {
	code                   int
	retryAfter, rejectedBy string // "" when absent
	hasRetryAfter          bool
	body                   string
}

func get(t *testing.T, app *fiber.App, path string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	_, hasRetryAfter := resp.Header["Retry-After"]
	return response{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), hasRetryAfter: hasRetryAfter,
		rejectedBy: resp.Header.Get("Fiberguard-Rejected-By"), body: string(body)}
}

func TestAdmitsBelowLower(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(0.5)})
	app := newApp(s)
	for i := 0; i < 20; i++ {
		if r := get(t, app, "/"); r.code != 200 || r.body != "ok" || r.rejectedBy != "" {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	if st := s.Status(); st.Admitted != 20 || st.Rejected != 0 || st.Probability != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRejectsAboveUpperWith503(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(0.97)})
	app := newApp(s)
	r := get(t, app, "/")
	want := response{code: 503, retryAfter: "1", hasRetryAfter: true, rejectedBy: "loadshed/default",
		body: "loadshed: overloaded, retry later\n"}
	if r != want {
		t.Fatalf("got %+v; want %+v", r, want)
	}
	if st := s.Status(); st.Rejected != 1 || st.Admitted != 0 || st.Probability != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFirstReadingBeforeFirstRequest(t *testing.T) {
	// No sampler tick can have happened yet: the first reading is taken in NewShedder.
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), Interval: time.Hour})
	if st := s.Status(); st.Load != 1 || st.Probability != 1 || st.UpdatedAt == nil {
		t.Fatalf("status right after NewShedder: %+v", st)
	}
	if r := get(t, newApp(s), "/"); r.code != 503 {
		t.Fatalf("first request got %d, want 503", r.code)
	}
}

func TestRetryAfter(t *testing.T) {
	// One rule: whole seconds, rounded up, at least 1; none when negative; 0 in a Config is the default, 1s.
	tests := []struct {
		retryAfter time.Duration
		want       string // "" means no header
	}{
		{0, "1"},
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{1500 * time.Millisecond, "2"},
		{30 * time.Second, "30"},
		{-time.Nanosecond, ""},
		{-time.Second, ""},
	}
	for _, tt := range tests {
		s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), RetryAfter: tt.retryAfter})
		r := get(t, newApp(s), "/")
		if r.code != 503 || r.retryAfter != tt.want || r.hasRetryAfter != (tt.want != "") {
			t.Errorf("RetryAfter %v: got %d Retry-After %q (present %v), want 503 %q", tt.retryAfter, r.code,
				r.retryAfter, r.hasRetryAfter, tt.want)
		}
		if r.rejectedBy != "loadshed/default" {
			t.Errorf("RetryAfter %v: Fiberguard-Rejected-By %q, want loadshed/default", tt.retryAfter, r.rejectedBy)
		}
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

func TestRejectedByNamesTheInstance(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), Name: "api"})
	if r := get(t, newApp(s), "/"); r.code != 503 || r.rejectedBy != "loadshed/api" {
		t.Fatalf("got %+v; want 503 with Fiberguard-Rejected-By loadshed/api", r)
	}
	if st := s.Status(); st.Name != "api" {
		t.Fatalf("Status().Name = %q, want api", st.Name)
	}
}

func TestCustomOnRejectSeesTheHeaders(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), Name: "edge", RetryAfter: 5 * time.Second,
		OnReject: func(c *fiber.Ctx) error {
			return c.Status(fiber.StatusTooManyRequests).SendString(
				"retry-after=" + c.GetRespHeader("Retry-After") + " by=" + c.GetRespHeader("Fiberguard-Rejected-By"))
		}})
	want := response{code: 429, retryAfter: "5", hasRetryAfter: true, rejectedBy: "loadshed/edge",
		body: "retry-after=5 by=loadshed/edge"}
	if r := get(t, newApp(s), "/"); r != want {
		t.Fatalf("got %+v; want %+v", r, want)
	}
}

func TestCriticalRequestsUseTheirOwnBand(t *testing.T) {
	load := newFixedLoad(0.96)
	s, reg := newTestShedder(t, Config{
		Signal:   load,
		Critical: func(c *fiber.Ctx) bool { return c.Get("X-Priority") == "critical" },
		Interval: time.Hour, // the test takes the readings itself: no sampler tick may race with it
	})
	app := newApp(s)
	if r := get(t, app, "/"); r.code != 503 {
		t.Fatalf("ordinary request at 0.96: %d, want 503", r.code)
	}
	if r := get(t, app, "/", "X-Priority", "critical"); r.code != 200 {
		t.Fatalf("critical request at 0.96: %d, want 200", r.code)
	}

	load.set(1.0)
	s.sample(false)
	if r := get(t, app, "/", "X-Priority", "critical"); r.code != 503 {
		t.Fatalf("critical request at 1.0: %d, want 503", r.code)
	}
	st := s.Status()
	if st.Rejected != 1 || st.CriticalAdmitted != 1 || st.CriticalRejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	wantRequests(t, reg, requestCounts{criticalAdmitted: 1, criticalRejected: 1, rejected: 1})
}

// requestCounts are the series of fiberguard_loadshed_requests_total of the instance named "default".
type requestCounts struct{ admitted, rejected, criticalAdmitted, criticalRejected int }

func wantRequests(t *testing.T, reg *prometheus.Registry, n requestCounts) {
	t.Helper()
	want := fmt.Sprintf(`
# HELP fiberguard_loadshed_requests_total Requests decided, by priority and decision (rejected decisions in dry-run mode are counted but served).
# TYPE fiberguard_loadshed_requests_total counter
fiberguard_loadshed_requests_total{decision="admitted",name="default",priority="critical"} %d
fiberguard_loadshed_requests_total{decision="admitted",name="default",priority="normal"} %d
fiberguard_loadshed_requests_total{decision="rejected",name="default",priority="critical"} %d
fiberguard_loadshed_requests_total{decision="rejected",name="default",priority="normal"} %d
`, n.criticalAdmitted, n.admitted, n.criticalRejected, n.rejected)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_requests_total"); err != nil {
		t.Fatal(err)
	}
}

func TestDryRunCountsButServes(t *testing.T) {
	s, reg := newTestShedder(t, Config{Signal: newFixedLoad(1), DryRun: true})
	app := newApp(s)
	for i := 0; i < 5; i++ {
		if r := get(t, app, "/"); r.code != 200 || r.rejectedBy != "" || r.hasRetryAfter {
			t.Fatalf("dry-run request got %+v", r)
		}
	}
	if st := s.Status(); st.Rejected != 5 || st.Admitted != 0 || !st.DryRun {
		t.Fatalf("status %+v", st)
	}
	if v := testutil.ToFloat64(gaugeOf(t, reg, "fiberguard_loadshed_dry_run")); v != 1 {
		t.Fatalf("dry_run gauge = %v", v)
	}
	// The would-be rejections are counted under the same decision as real ones.
	wantRequests(t, reg, requestCounts{rejected: 5})
}

// gaugeOf gathers one single-series metric from reg as a collector testutil can read.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("metric %s not found", name)
	return nil
}

func TestNextBypasses(t *testing.T) {
	s, _ := newTestShedder(t, Config{
		Signal: newFixedLoad(1),
		Next:   func(c *fiber.Ctx) bool { return c.Path() == "/healthz" },
	})
	app := newApp(s)
	if r := get(t, app, "/healthz"); r.code != 200 {
		t.Fatalf("/healthz got %d", r.code)
	}
	if r := get(t, app, "/work"); r.code != 503 {
		t.Fatalf("/work got %d", r.code)
	}
	if st := s.Status(); st.Admitted+st.Rejected != 1 {
		t.Fatalf("bypassed request was counted: %+v", st)
	}
}

func TestProbabilityInTheBand(t *testing.T) {
	// p = 0.5; the decision itself is table-tested in TestPolicyShed, this checks the glue draws fresh numbers.
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(0.925)})
	h := newApp(s).Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	rejected := 0
	const n = 4000
	for i := 0; i < n; i++ {
		ctx.Response.Reset()
		h(&ctx)
		if ctx.Response.StatusCode() == 503 {
			rejected++
		}
	}
	// Binomial(4000, 0.5) has a standard deviation of ~32; ±300 is over 9 of them.
	if rejected < n/2-300 || rejected > n/2+300 {
		t.Fatalf("rejected %d of %d at p=0.5", rejected, n)
	}
	if st := s.Status(); int(st.Rejected) != rejected || int(st.Admitted) != n-rejected {
		t.Fatalf("counters %+v disagree with %d rejected", st, rejected)
	}
}

func TestConfigPanicsNameTheField(t *testing.T) {
	tests := []struct {
		field string
		cfg   Config
	}{
		{"Config.Lower", Config{Lower: -0.1}},
		{"Config.Lower", Config{Lower: math.NaN()}},
		{"Config.Upper", Config{Lower: 0.9, Upper: 0.8}},
		{"Config.Upper", Config{Lower: 0.9, Upper: 0.9}},
		{"Config.CriticalLower", Config{CriticalLower: 0.5}},
		{"Config.CriticalUpper", Config{CriticalLower: 0.99, CriticalUpper: 0.98}},
		{"Config.Interval", Config{Interval: -time.Second}},
		{"Config.Smoothing", Config{Smoothing: 1.5}},
		{"Config.Smoothing", Config{Smoothing: -1}},
		{"Config.CPUs", Config{CPUs: -2}},
		{"Config.Name", Config{Name: "api\r\nX-Injected: 1"}},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tt.field) {
					t.Errorf("config %+v: panic %v, want one naming %s", tt.cfg, r, tt.field)
				}
			}()
			tt.cfg.Signal = newFixedLoad(0)
			tt.cfg.DisableMetrics = true
			_ = NewShedder(tt.cfg)
		}()
	}
}

func TestDefaultsFollowACustomUpper(t *testing.T) {
	// A user who raises Upper above the default critical band gets a critical band above it.
	tests := []struct {
		cfg                  Config
		critLower, critUpper float64
	}{
		{Config{}, 0.98, 1.0},
		{Config{Lower: 0.97, Upper: 0.99}, 0.99, 1.0},
		{Config{Lower: 0.95, Upper: 1.0}, 1.0, 1.05},
		{Config{CriticalLower: 0.99}, 0.99, 1.0},
	}
	for _, tt := range tests {
		tt.cfg.DisableMetrics = true
		cfg := configDefault(tt.cfg)
		if math.Abs(cfg.CriticalLower-tt.critLower) > 1e-12 || math.Abs(cfg.CriticalUpper-tt.critUpper) > 1e-12 {
			t.Errorf("%+v: critical band [%v, %v], want [%v, %v]", tt.cfg, cfg.CriticalLower, cfg.CriticalUpper, tt.critLower, tt.critUpper)
		}
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
		s := NewShedder(Config{Signal: sig, Smoothing: 0.5, Interval: time.Second, DisableMetrics: true})
		want := []float64{0.5, 0.75, 0.75, 0.75, 0.5}
		for step, w := range want {
			if step > 0 {
				time.Sleep(time.Second)
				synctest.Wait()
			}
			if got := s.Status().Load; math.Abs(got-w) > 1e-12 {
				t.Fatalf("after reading %d: load %v, want %v", step, got, w)
			}
		}
		if e := s.Status().SamplerErrors; e != 2 {
			t.Fatalf("sampler errors %d, want 2", e)
		}
		_ = s.Close()
		_ = s.Close() // idempotent
	})
}

func TestContextStopsTheSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		_ = New(Config{Context: ctx, Interval: time.Second, DisableMetrics: true,
			Signal: SignalFunc(func() (float64, error) { reads.Add(1); return 0, nil })})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := reads.Load(); n != 4 { // the first reading in New, then one per second
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

func TestMetricsAndTwoInstances(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewShedder(Config{Signal: newFixedLoad(0.96), Smoothing: 1, Registerer: reg})
	defer a.Close()
	// Same name on the same registry: must not panic; the second instance works without metrics.
	b := NewShedder(Config{Signal: newFixedLoad(0.1), Smoothing: 1, Registerer: reg})
	defer b.Close()
	if b.metrics != nil {
		t.Fatal("duplicate instance registered its metrics")
	}
	c := NewShedder(Config{Signal: newFixedLoad(0.1), Smoothing: 1, Registerer: reg, Name: "api"})
	want := `
# HELP fiberguard_loadshed_load Smoothed load, as a fraction of capacity.
# TYPE fiberguard_loadshed_load gauge
fiberguard_loadshed_load{name="api"} 0.1
fiberguard_loadshed_load{name="default"} 0.96
# HELP fiberguard_loadshed_probability Current probability of rejecting a request, by priority.
# TYPE fiberguard_loadshed_probability gauge
fiberguard_loadshed_probability{name="api",priority="critical"} 0
fiberguard_loadshed_probability{name="default",priority="critical"} 0
fiberguard_loadshed_probability{name="api",priority="normal"} 0
fiberguard_loadshed_probability{name="default",priority="normal"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_load", "fiberguard_loadshed_probability"); err != nil {
		t.Fatal(err)
	}
	// Close unregisters, so a new instance can take the name.
	_ = c.Close()
	d := NewShedder(Config{Signal: newFixedLoad(0.1), Registerer: reg, Name: "api"})
	defer d.Close()
	if d.metrics == nil {
		t.Fatal("name not reusable after Close")
	}
}

func TestContextDoneLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	h, ctxReq := benchApp(New(Config{Context: ctx, Signal: newFixedLoad(1), Interval: time.Millisecond, DisableMetrics: true}))
	cancel()
	// The sampler is gone (VerifyNone above); requests are still answered with the last load.
	h(ctxReq)
	if got := ctxReq.Response.StatusCode(); got != 503 {
		t.Fatalf("request after the context ended: %d, want 503", got)
	}
}

func TestCloseIsIdempotentAndConcurrentWithRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := prometheus.NewRegistry()
	s := NewShedder(Config{Signal: newFixedLoad(1), Smoothing: 1, Interval: time.Millisecond, Registerer: reg})
	app := newApp(s)
	h := app.Handler()

	var stop atomic.Bool
	var served, wrong atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/")
			for !stop.Load() {
				ctx.Response.Reset()
				h(&ctx)
				served.Add(1)
				if ctx.Response.StatusCode() != 503 {
					wrong.Add(1)
				}
			}
		})
	}
	for served.Load() < 100 { // requests are in flight before Close
		runtime.Gosched()
	}
	var closers sync.WaitGroup
	for range 3 {
		closers.Go(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
	closers.Wait()
	after := served.Load()
	for served.Load() < after+100 { // and keep being answered after it
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatalf("Close after Close = %v", err)
	}
	if n := wrong.Load(); n != 0 {
		t.Fatalf("%d of %d requests were not rejected at load 1", n, served.Load())
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Fatalf("after Close the registry still gathers %d families (%v)", len(mfs), err)
	}
}

func TestNilRegistererUsesTheDefault(t *testing.T) {
	const name = "nil-registerer-test"
	find := func() bool {
		mfs, err := prometheus.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "fiberguard_loadshed_load" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" && l.GetValue() == name {
						return true
					}
				}
			}
		}
		return false
	}
	s := NewShedder(Config{Signal: newFixedLoad(0.5), Name: name})
	if !find() {
		_ = s.Close()
		t.Fatal("a nil Registerer did not register on prometheus.DefaultRegisterer")
	}
	_ = s.Close()
	if find() {
		t.Fatal("Close left the metrics on prometheus.DefaultRegisterer")
	}
}

func TestStatusJSON(t *testing.T) {
	sig := newFixedLoad(0.97)
	s, _ := newTestShedder(t, Config{Signal: sig, Name: "api", Interval: time.Hour}) // the test takes the readings
	get(t, newApp(s), "/")
	before := time.Now()
	s.sample(false)

	raw, err := json.Marshal(s.Status())
	if err != nil {
		t.Fatal(err)
	}
	// The shape every module's Status shares begins the object.
	if !strings.HasPrefix(string(raw), `{"name":"api","updated_at":"`) {
		t.Fatalf("Status JSON does not begin with name and updated_at: %s", raw)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "api", "load": 0.97, "probability": 1.0, "critical_probability": 0.0,
		"admitted": 0.0, "rejected": 1.0, "critical_admitted": 0.0, "critical_rejected": 0.0, "sampler_errors": 0.0,
		"dry_run": false, "signal": "custom", "interval_seconds": 3600.0, "readings": []any{},
	}
	updated, _ := got["updated_at"].(string)
	delete(got, "updated_at")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Status JSON\n got %v\nwant %v (and updated_at)", got, want)
	}
	at, err := time.Parse(time.RFC3339Nano, updated)
	if err != nil || at.Before(before.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("updated_at %q (%v): not the time of the last reading, %v", updated, err, before)
	}
}

func TestStatusBeforeAnyReading(t *testing.T) {
	s, _ := newTestShedder(t, Config{Interval: time.Hour,
		Signal: SignalFunc(func() (float64, error) { return 0, errors.New("not yet") })})
	raw, err := json.Marshal(s.Status())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"updated_at":null`) || !strings.Contains(string(raw), `"sampler_errors":1`) {
		t.Fatalf("Status JSON before any reading: %s; want updated_at null and one sampler error", raw)
	}
}

func TestStatusReturnsFreshValues(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: Max(&named{name: "a", load: 0.5}), Interval: time.Hour})
	first := s.Status()
	if first.UpdatedAt == nil || len(first.Readings) != 1 {
		t.Fatalf("status %+v", first)
	}
	was := *first.UpdatedAt
	*first.UpdatedAt = time.Time{}
	first.Readings[0].Load = 42
	if again := s.Status(); !again.UpdatedAt.Equal(was) || again.Readings[0].Load != 0.5 {
		t.Fatalf("editing one Status changed the next: %+v", again)
	}
}
