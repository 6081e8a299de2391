package loadshed

import (
	"io"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

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
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(0.5)})
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
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(0.97)})
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
		s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(1), RetryAfter: tt.retryAfter})
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

func TestRejectedByNamesTheInstance(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(1), Name: "api"})
	if r := get(t, newApp(s), "/"); r.code != 503 || r.rejectedBy != "loadshed/api" {
		t.Fatalf("got %+v; want 503 with Fiberguard-Rejected-By loadshed/api", r)
	}
	if st := s.Status(); st.Name != "api" {
		t.Fatalf("Status().Name = %q, want api", st.Name)
	}
}

func TestCustomOnRejectSeesTheHeaders(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(1), Name: "edge", RetryAfter: 5 * time.Second,
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
	load := coretest.NewFixedLoad(0.96)
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

	load.Set(1.0)
	s.engine.Sample()
	if r := get(t, app, "/", "X-Priority", "critical"); r.code != 503 {
		t.Fatalf("critical request at 1.0: %d, want 503", r.code)
	}
	st := s.Status()
	if st.Rejected != 1 || st.CriticalAdmitted != 1 || st.CriticalRejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	coretest.WantRequests(t, reg, coretest.RequestCounts{CriticalAdmitted: 1, CriticalRejected: 1, Rejected: 1})
}

func TestDryRunCountsButServes(t *testing.T) {
	s, reg := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(1), DryRun: true})
	app := newApp(s)
	for i := 0; i < 5; i++ {
		if r := get(t, app, "/"); r.code != 200 || r.rejectedBy != "" || r.hasRetryAfter {
			t.Fatalf("dry-run request got %+v", r)
		}
	}
	if st := s.Status(); st.Rejected != 5 || st.Admitted != 0 || !st.DryRun {
		t.Fatalf("status %+v", st)
	}
	if v := coretest.Gauge(t, reg, "fiberguard_loadshed_dry_run"); v != 1 {
		t.Fatalf("dry_run gauge = %v", v)
	}
	// The would-be rejections are counted under the same decision as real ones.
	coretest.WantRequests(t, reg, coretest.RequestCounts{Rejected: 5})
}

func TestNextBypasses(t *testing.T) {
	s, _ := newTestShedder(t, Config{
		Signal: coretest.NewFixedLoad(1),
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
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(0.925)})
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

func TestCloseIsIdempotentAndConcurrentWithRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := prometheus.NewRegistry()
	s := NewShedder(Config{Signal: coretest.NewFixedLoad(1), Smoothing: 1, Interval: time.Millisecond, Registerer: reg})
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

func TestInFlightCountsEachRequestUntilItsHandlerReturns(t *testing.T) {
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(0), Interval: time.Hour})
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		defer func() { _ = recover() }() // a recover middleware before the shedder
		return c.Next()
	})
	app.Use(s.Handler())
	var during atomic.Int64
	app.Get("/seen", func(c *fiber.Ctx) error {
		during.Store(s.Status().InFlight)
		return c.SendString("ok")
	})
	app.Get("/fails", func(c *fiber.Ctx) error { return fiber.ErrTeapot })
	app.Get("/panics", func(c *fiber.Ctx) error { panic("handler bug") })
	for _, path := range []string{"/seen", "/fails", "/panics", "/missing"} {
		get(t, app, path)
		if n := s.Status().InFlight; n != 0 {
			t.Fatalf("after %s: %d in flight, want 0: every admitted request is done when its handler returns", path, n)
		}
	}
	if during.Load() != 1 {
		t.Fatalf("in flight during the handler: %d, want 1", during.Load())
	}
}
