package glue

import (
	"context"
	"io"
	"math"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	loadshedv2 "github.com/fiberguard/fiberguard/loadshed"
	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	loadshedhttp "github.com/fiberguard/fiberguard/nethttp/loadshed"
	loadshedv3 "github.com/fiberguard/fiberguard/v3/loadshed"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// loadshedAdapter is one version's loadshed adapter.
type loadshedAdapter[C core.Ctx, H ~func(C) error] struct {
	fv         version[C, H]
	new        func(config ...core.Config[C, H]) H
	newShedder func(config ...core.Config[C, H]) shedder[H]
	defaults   defaults[core.Config[C, H]]
}

// shedder is a version's Shedder: the core's for Fiber, the net/http adapter's for net/http.
type shedder[H any] interface {
	Handler() H
	Status() core.Status
	Close() error
}

var (
	loadshedV2 = loadshedAdapter[*fiberv2Ctx, fiberv2Handler]{v2, loadshedv2.New,
		func(config ...loadshedv2.Config) shedder[fiberv2Handler] { return loadshedv2.NewShedder(config...) },
		fiberDefaults(&loadshedv2.ConfigDefault)}
	loadshedV3 = loadshedAdapter[fiberv3Ctx, fiberv3Handler]{v3, loadshedv3.New,
		func(config ...loadshedv3.Config) shedder[fiberv3Handler] { return loadshedv3.NewShedder(config...) },
		fiberDefaults(&loadshedv3.ConfigDefault)}
	loadshedNet = loadshedAdapter[*httpCtx, httpHandler]{netHTTP,
		func(config ...core.Config[*httpCtx, httpHandler]) httpHandler {
			return middleware(loadshedhttp.New(convertConfigs[loadshedhttp.Config](config)...))
		},
		func(config ...core.Config[*httpCtx, httpHandler]) shedder[httpHandler] {
			return loadshedHTTP{loadshedhttp.NewShedder(convertConfigs[loadshedhttp.Config](config)...)}
		},
		httpDefaults[core.Config[*httpCtx, httpHandler]](&loadshedhttp.ConfigDefault)}
)

// loadshedHTTP is the net/http Shedder with its middleware in the net/http version's chain.
type loadshedHTTP struct{ *loadshedhttp.Shedder }

func (s loadshedHTTP) Handler() httpHandler { return middleware(s.Shedder.Handler()) }

func TestLoadshed(t *testing.T) {
	each(t, loadshedV2, loadshedV3, loadshedNet, loadshedSuite, loadshedSuite, loadshedSuite)
}

// shedder builds a Shedder on a private registry with smoothing off, so the load is the signal's.
func (a loadshedAdapter[C, H]) shedder(t *testing.T, cfg core.Config[C, H]) (shedder[H], *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	s := a.newShedder(cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s, reg
}

// app is an app with the middleware in front of routes answering "ok".
func (a loadshedAdapter[C, H]) app(mw H) app[C, H] {
	ap := a.fv.newApp()
	ap.Use(mw)
	ap.Get("/*", func(c C) error { return a.fv.send(c, 200, "ok") })
	return ap
}

// response is what a test request got back.
type response struct {
	code                   int
	retryAfter, rejectedBy string // "" when absent
	hasRetryAfter          bool
	body                   string
}

func get[C any, H ~func(C) error](t *testing.T, ap app[C, H], path string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ap.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	_, hasRetryAfter := resp.Header["Retry-After"]
	return response{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), hasRetryAfter: hasRetryAfter,
		rejectedBy: resp.Header.Get("Fiberguard-Rejected-By"), body: string(body)}
}

type config[C core.Ctx, H ~func(C) error] = core.Config[C, H]

func loadshedSuite[C core.Ctx, H ~func(C) error](t *testing.T, a loadshedAdapter[C, H]) {
	fv := a.fv
	t.Run("AdmitsBelowLower", func(t *testing.T) {
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(0.5)})
		ap := a.app(s.Handler())
		for i := 0; i < 20; i++ {
			if r := get(t, ap, "/"); r.code != 200 || r.body != "ok" || r.rejectedBy != "" || r.hasRetryAfter {
				t.Fatalf("request %d: %+v", i, r)
			}
		}
		if st := s.Status(); st.Admitted != 20 || st.Rejected != 0 || st.Probability != 0 {
			t.Fatalf("stats %+v", st)
		}
	})

	t.Run("RejectsAboveUpperWith503", func(t *testing.T) {
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(0.97)})
		ap := a.app(s.Handler())
		r := get(t, ap, "/")
		want := response{code: 503, retryAfter: "1", hasRetryAfter: true, rejectedBy: "loadshed/default",
			body: "loadshed: overloaded, retry later\n"}
		if r != want {
			t.Fatalf("got %+v; want %+v", r, want)
		}
		cl := ap.Call("/")
		cl.Do()
		if ct, _ := cl.Header("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Fatalf("Content-Type %q, want text/plain; charset=utf-8", ct)
		}
		if st := s.Status(); st.Rejected != 2 || st.Admitted != 0 || st.Probability != 1 {
			t.Fatalf("stats %+v", st)
		}
	})

	t.Run("RetryAfter", func(t *testing.T) {
		// One rule: whole seconds, rounded up, at least 1; none when negative; 0 in a Config is the default, 1s.
		for _, tt := range []struct {
			retryAfter time.Duration
			want       string // "" means no header
		}{
			{0, "1"}, {time.Nanosecond, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"},
			{30 * time.Second, "30"}, {-time.Nanosecond, ""}, {-time.Second, ""},
		} {
			s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(1), RetryAfter: tt.retryAfter})
			r := get(t, a.app(s.Handler()), "/")
			if r.code != 503 || r.retryAfter != tt.want || r.hasRetryAfter != (tt.want != "") {
				t.Errorf("RetryAfter %v: got %d Retry-After %q (present %v), want 503 %q", tt.retryAfter, r.code,
					r.retryAfter, r.hasRetryAfter, tt.want)
			}
			if r.rejectedBy != "loadshed/default" {
				t.Errorf("RetryAfter %v: Fiberguard-Rejected-By %q, want loadshed/default", tt.retryAfter, r.rejectedBy)
			}
		}
	})

	t.Run("RejectedByNamesTheInstance", func(t *testing.T) {
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(1), Name: "api"})
		if r := get(t, a.app(s.Handler()), "/"); r.code != 503 || r.rejectedBy != "loadshed/api" {
			t.Fatalf("got %+v; want 503 with Fiberguard-Rejected-By loadshed/api", r)
		}
		if st := s.Status(); st.Name != "api" {
			t.Fatalf("Status().Name = %q, want api", st.Name)
		}
	})

	t.Run("CustomOnRejectSeesTheHeaders", func(t *testing.T) {
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(1), Name: "edge", RetryAfter: 5 * time.Second,
			OnReject: func(c C) error {
				return fv.send(c, 429, "retry-after="+fv.respHeader(c, "Retry-After")+" by="+fv.respHeader(c, "Fiberguard-Rejected-By"))
			}})
		want := response{code: 429, retryAfter: "5", hasRetryAfter: true, rejectedBy: "loadshed/edge",
			body: "retry-after=5 by=loadshed/edge"}
		if r := get(t, a.app(s.Handler()), "/"); r != want {
			t.Fatalf("got %+v; want %+v", r, want)
		}
	})

	t.Run("CriticalRequestsUseTheirOwnBand", func(t *testing.T) {
		load := coretest.NewFixedLoad(0.96)
		s, reg := a.shedder(t, config[C, H]{
			Signal:   load,
			Critical: func(c C) bool { return fv.header(c, "X-Priority") == "critical" },
			Interval: time.Hour, // no sampler tick races with the requests below
		})
		ap := a.app(s.Handler())
		if r := get(t, ap, "/"); r.code != 503 {
			t.Fatalf("ordinary request at 0.96: %d, want 503", r.code)
		}
		if r := get(t, ap, "/", "X-Priority", "critical"); r.code != 200 {
			t.Fatalf("critical request at 0.96: %d, want 200", r.code)
		}
		s2, reg2 := a.shedder(t, config[C, H]{
			Signal:   coretest.NewFixedLoad(1.0),
			Critical: func(c C) bool { return fv.header(c, "X-Priority") == "critical" },
			Interval: time.Hour,
		})
		if r := get(t, a.app(s2.Handler()), "/", "X-Priority", "critical"); r.code != 503 {
			t.Fatalf("critical request at 1.0: %d, want 503", r.code)
		}
		if st := s.Status(); st.Rejected != 1 || st.CriticalAdmitted != 1 || st.CriticalRejected != 0 {
			t.Fatalf("stats at 0.96 %+v", st)
		}
		if st := s2.Status(); st.CriticalRejected != 1 {
			t.Fatalf("stats at 1.0 %+v", st)
		}
		coretest.WantRequests(t, reg, coretest.RequestCounts{CriticalAdmitted: 1, Rejected: 1})
		coretest.WantRequests(t, reg2, coretest.RequestCounts{CriticalRejected: 1})
	})

	t.Run("DryRunCountsButServes", func(t *testing.T) {
		s, reg := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(1), DryRun: true})
		ap := a.app(s.Handler())
		for i := 0; i < 5; i++ {
			if r := get(t, ap, "/"); r.code != 200 || r.body != "ok" || r.rejectedBy != "" || r.hasRetryAfter {
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
	})

	t.Run("NextBypasses", func(t *testing.T) {
		s, _ := a.shedder(t, config[C, H]{
			Signal: coretest.NewFixedLoad(1),
			Next:   func(c C) bool { return fv.path(c) == "/healthz" },
		})
		ap := a.app(s.Handler())
		if r := get(t, ap, "/healthz"); r.code != 200 || r.body != "ok" {
			t.Fatalf("/healthz got %+v", r)
		}
		if r := get(t, ap, "/work"); r.code != 503 {
			t.Fatalf("/work got %d", r.code)
		}
		if st := s.Status(); st.Admitted+st.Rejected != 1 {
			t.Fatalf("bypassed request was counted: %+v", st)
		}
	})

	t.Run("ProbabilityInTheBand", func(t *testing.T) {
		// p = 0.5; the decision itself is table-tested in the core, this checks the glue draws fresh numbers.
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(0.925)})
		cl := a.app(s.Handler()).Call("/")
		rejected := 0
		const n = 4000
		for i := 0; i < n; i++ {
			cl.Do()
			if cl.Status() == 503 {
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
	})

	t.Run("CloseIsIdempotentAndConcurrentWithRequests", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		reg := prometheus.NewRegistry()
		s := a.newShedder(config[C, H]{Signal: coretest.NewFixedLoad(1), Smoothing: 1, Interval: time.Millisecond, Registerer: reg})
		ap := a.app(s.Handler())
		var stop atomic.Bool
		var served, wrong atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			cl := ap.Call("/")
			wg.Go(func() {
				for !stop.Load() {
					cl.Do()
					served.Add(1)
					if cl.Status() != 503 {
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
	})

	t.Run("InFlightCountsEachRequestUntilItsHandlerReturns", func(t *testing.T) {
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(0), Interval: time.Hour})
		ap := fv.newApp()
		ap.Use(func(c C) error {
			defer func() { _ = recover() }() // a recover middleware before the shedder
			return fv.next(c)
		})
		ap.Use(s.Handler())
		var during atomic.Int64
		ap.Get("/seen", func(c C) error {
			during.Store(s.Status().InFlight)
			return fv.send(c, 200, "ok")
		})
		ap.Get("/fails", func(c C) error { return fv.send(c, 418, "teapot") })
		ap.Get("/panics", func(c C) error { panic("handler bug") })
		for _, path := range []string{"/seen", "/fails", "/panics", "/missing"} {
			get(t, ap, path)
			if n := s.Status().InFlight; n != 0 {
				t.Fatalf("after %s: %d in flight, want 0: every admitted request is done when its handler returns", path, n)
			}
		}
		if during.Load() != 1 {
			t.Fatalf("in flight during the handler: %d, want 1", during.Load())
		}
	})

	t.Run("FirstReadingBeforeFirstRequest", func(t *testing.T) {
		// No sampler tick can have happened yet: the first reading is taken in NewShedder.
		s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(1), Interval: time.Hour})
		if st := s.Status(); st.Load != 1 || st.Probability != 1 || st.UpdatedAt == nil {
			t.Fatalf("status right after NewShedder: %+v", st)
		}
		if r := get(t, a.app(s.Handler()), "/"); r.code != 503 {
			t.Fatalf("first request got %d, want 503", r.code)
		}
	})

	t.Run("ContextDoneLeavesNoGoroutine", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		ctx, cancel := context.WithCancel(context.Background())
		cl := a.app(a.new(config[C, H]{Context: ctx, Signal: coretest.NewFixedLoad(1), Interval: time.Millisecond, DisableMetrics: true})).Call("/")
		cancel()
		// The sampler is gone (VerifyNone above); requests are still answered with the last load.
		cl.Do()
		if got := cl.Status(); got != 503 {
			t.Fatalf("request after the context ended: %d, want 503", got)
		}
	})

	t.Run("ConfigDefault", func(t *testing.T) {
		// The adapter's defaults are the core's, with the version's OnReject; a zero Config takes them all.
		d := a.defaults.get()
		want := core.Defaults[C](d.OnReject)
		if d.OnReject == nil || d.Lower != want.Lower || d.Upper != want.Upper || d.Interval != want.Interval ||
			d.Name != want.Name || d.RetryAfter != want.RetryAfter || d.Next != nil || d.Critical != nil {
			t.Fatalf("ConfigDefault %+v, want the core's defaults %+v", d, want)
		}
		// Halfway through the default band [0.90, 0.95]: probability one half.
		s := a.newShedder(config[C, H]{Signal: coretest.NewFixedLoad(0.925), DisableMetrics: true})
		defer s.Close()
		if st := s.Status(); math.Abs(st.Probability-0.5) > 1e-9 || st.Name != "default" || st.IntervalSeconds != 0.02 {
			t.Fatalf("a zero Config: status %+v, want the default band, name and interval", st)
		}
		// ConfigDefault is read when NewShedder runs: a change to it applies to the Shedders built after it.
		a.defaults.edit(t, func(d *config[C, H]) { d.Name = "changed" })
		s2 := a.newShedder(config[C, H]{Signal: coretest.NewFixedLoad(0), DisableMetrics: true})
		defer s2.Close()
		if st := s2.Status(); st.Name != "changed" {
			t.Fatalf("Name %q after changing ConfigDefault.Name, want changed", st.Name)
		}
	})

	t.Run("ConfigPanicsNameTheField", func(t *testing.T) {
		for _, tt := range []struct {
			field string
			cfg   config[C, H]
		}{
			{"Config.Upper", config[C, H]{Lower: 0.9, Upper: 0.8}},
			{"Config.Name", config[C, H]{Name: "api\r\nX-Injected: 1"}},
			{"Config.Smoothing", config[C, H]{Smoothing: 2}},
		} {
			func() {
				defer func() {
					msg, _ := recover().(string)
					if len(msg) < len("loadshed: "+tt.field+" must ") || msg[:len("loadshed: "+tt.field+" must ")] != "loadshed: "+tt.field+" must " {
						t.Errorf("config %+v: panic %q, want one naming %s", tt.cfg, msg, tt.field)
					}
				}()
				tt.cfg.Signal = coretest.NewFixedLoad(0)
				tt.cfg.DisableMetrics = true
				_ = a.newShedder(tt.cfg)
			}()
		}
	})

	t.Run("RequestPathDoesNotAllocate", func(t *testing.T) {
		// Accepted or rejected by the default OnReject (the benchmarks show the same with -benchmem).
		for _, tc := range []struct {
			load float64
			want int
		}{{0.5, 200}, {1, 503}} {
			s, _ := a.shedder(t, config[C, H]{Signal: coretest.NewFixedLoad(tc.load), DisableMetrics: true})
			cl := a.app(s.Handler()).Call("/")
			cl.Do() // warm the response buffers
			if n := testing.AllocsPerRun(1000, cl.Do); n != 0 {
				t.Errorf("load %v: %v allocations per request, want 0", tc.load, n)
			}
			if got := cl.Status(); got != tc.want {
				t.Fatalf("load %v: status %d, want %d", tc.load, got, tc.want)
			}
		}
	})

	t.Run("InstancesShareARegistry", func(t *testing.T) {
		// Two Shedders of distinct names share one registry; a second of the same name does not panic.
		reg := prometheus.NewRegistry()
		for _, name := range []string{"a", "b", "b"} {
			s := a.newShedder(config[C, H]{Signal: coretest.NewFixedLoad(0), Name: name, Registerer: reg})
			t.Cleanup(func() { _ = s.Close() })
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		series := 0
		for _, mf := range mfs {
			if mf.GetName() == "fiberguard_loadshed_load" {
				series = len(mf.GetMetric())
			}
		}
		if series != 2 {
			t.Fatalf("%d series of fiberguard_loadshed_load, want 2 (a and b)", series)
		}
	})
}
