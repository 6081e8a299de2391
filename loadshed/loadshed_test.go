package loadshed

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
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

func get(t *testing.T, app *fiber.App, path string, header ...string) (int, string, string) {
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
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

func TestAdmitsBelowLower(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(0.5)})
	app := newApp(s)
	for i := 0; i < 20; i++ {
		if code, _, body := get(t, app, "/"); code != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	if st := s.Stats(); st.Admitted != 20 || st.Shed != 0 || st.Probability != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRejectsAboveUpperWith503(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(0.97)})
	app := newApp(s)
	code, retry, body := get(t, app, "/")
	if code != 503 || retry != "1" || body != "Service Unavailable" {
		t.Fatalf("got %d Retry-After=%q %q; want 503, 1, Service Unavailable", code, retry, body)
	}
	if st := s.Stats(); st.Shed != 1 || st.Admitted != 0 || st.Probability != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFirstReadingBeforeFirstRequest(t *testing.T) {
	// No sampler tick can have happened yet: the first reading is taken in NewShedder.
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), Interval: time.Hour})
	if st := s.Stats(); st.Load != 1 || st.Probability != 1 {
		t.Fatalf("stats right after NewShedder: %+v", st)
	}
	if code, _, _ := get(t, newApp(s), "/"); code != 503 {
		t.Fatalf("first request got %d, want 503", code)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		retryAfter time.Duration
		want       string
	}{
		{0, "1"}, // default
		{1500 * time.Millisecond, "2"},
		{30 * time.Second, "30"},
		{-1, ""},
	}
	for _, tt := range tests {
		s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), RetryAfter: tt.retryAfter})
		if code, retry, _ := get(t, newApp(s), "/"); code != 503 || retry != tt.want {
			t.Errorf("RetryAfter %v: got %d %q, want 503 %q", tt.retryAfter, code, retry, tt.want)
		}
	}
}

func TestCustomOnShed(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), OnShed: func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusTooManyRequests).SendString("busy")
	}})
	if code, _, body := get(t, newApp(s), "/"); code != 429 || body != "busy" {
		t.Fatalf("got %d %q", code, body)
	}
}

func TestCriticalRequestsUseTheirOwnBand(t *testing.T) {
	load := newFixedLoad(0.96)
	s, reg := newTestShedder(t, Config{
		Signal:   load,
		Critical: func(c *fiber.Ctx) bool { return c.Get("X-Priority") == "critical" },
	})
	app := newApp(s)
	if code, _, _ := get(t, app, "/"); code != 503 {
		t.Fatalf("ordinary request at 0.96: %d, want 503", code)
	}
	if code, _, _ := get(t, app, "/", "X-Priority", "critical"); code != 200 {
		t.Fatalf("critical request at 0.96: %d, want 200", code)
	}

	load.set(1.0)
	s.sample(false)
	if code, _, _ := get(t, app, "/", "X-Priority", "critical"); code != 503 {
		t.Fatalf("critical request at 1.0: %d, want 503", code)
	}
	st := s.Stats()
	if st.Shed != 1 || st.CriticalAdmitted != 1 || st.CriticalShed != 1 {
		t.Fatalf("stats %+v", st)
	}
	want := `
# HELP fiberguard_loadshed_requests_total Requests decided, by priority and decision (shed decisions in dry-run mode are counted but served).
# TYPE fiberguard_loadshed_requests_total counter
fiberguard_loadshed_requests_total{decision="admitted",priority="critical",shedder="default"} 1
fiberguard_loadshed_requests_total{decision="admitted",priority="normal",shedder="default"} 0
fiberguard_loadshed_requests_total{decision="shed",priority="critical",shedder="default"} 1
fiberguard_loadshed_requests_total{decision="shed",priority="normal",shedder="default"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_requests_total"); err != nil {
		t.Fatal(err)
	}
}

func TestDryRunCountsButServes(t *testing.T) {
	s, reg := newTestShedder(t, Config{Signal: newFixedLoad(1), DryRun: true})
	app := newApp(s)
	for i := 0; i < 5; i++ {
		if code, _, _ := get(t, app, "/"); code != 200 {
			t.Fatalf("dry-run request got %d", code)
		}
	}
	if st := s.Stats(); st.Shed != 5 || st.Admitted != 0 || !st.DryRun {
		t.Fatalf("stats %+v", st)
	}
	if v := testutil.ToFloat64(gaugeOf(t, reg, "fiberguard_loadshed_dry_run")); v != 1 {
		t.Fatalf("dry_run gauge = %v", v)
	}
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
	if code, _, _ := get(t, app, "/healthz"); code != 200 {
		t.Fatalf("/healthz got %d", code)
	}
	if code, _, _ := get(t, app, "/work"); code != 503 {
		t.Fatalf("/work got %d", code)
	}
	if st := s.Stats(); st.Admitted+st.Shed != 1 {
		t.Fatalf("bypassed request was counted: %+v", st)
	}
}

func TestProbabilityInTheBand(t *testing.T) {
	// p = 0.5; the decision itself is table-tested in TestPolicyShed, this checks the glue draws fresh numbers.
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(0.925)})
	h := newApp(s).Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	shed := 0
	const n = 4000
	for i := 0; i < n; i++ {
		ctx.Response.Reset()
		h(&ctx)
		if ctx.Response.StatusCode() == 503 {
			shed++
		}
	}
	// Binomial(4000, 0.5) has a standard deviation of ~32; ±300 is over 9 of them.
	if shed < n/2-300 || shed > n/2+300 {
		t.Fatalf("shed %d of %d at p=0.5", shed, n)
	}
	if st := s.Stats(); int(st.Shed) != shed || int(st.Admitted) != n-shed {
		t.Fatalf("counters %+v disagree with %d shed", st, shed)
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
			if got := s.Stats().Load; math.Abs(got-w) > 1e-12 {
				t.Fatalf("after reading %d: load %v, want %v", step, got, w)
			}
		}
		if e := s.Stats().SamplerErrors; e != 2 {
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
fiberguard_loadshed_load{shedder="api"} 0.1
fiberguard_loadshed_load{shedder="default"} 0.96
# HELP fiberguard_loadshed_probability Current probability of shedding a request, by priority.
# TYPE fiberguard_loadshed_probability gauge
fiberguard_loadshed_probability{priority="critical",shedder="api"} 0
fiberguard_loadshed_probability{priority="critical",shedder="default"} 0
fiberguard_loadshed_probability{priority="normal",shedder="api"} 0
fiberguard_loadshed_probability{priority="normal",shedder="default"} 1
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
