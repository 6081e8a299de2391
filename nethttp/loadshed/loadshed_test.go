package loadshed_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/fiberguard/fiberguard/nethttp/loadshed"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// shedder builds a Shedder on a private registry with smoothing off, so the load is the signal's.
func shedder(t *testing.T, cfg loadshed.Config) (*loadshed.Shedder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	s := loadshed.NewShedder(cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s, reg
}

// ok answers every request with 200 "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// response is what a test request got back.
type response struct {
	code                   int
	retryAfter, rejectedBy string // "" when absent
	hasRetryAfter          bool
	body                   string
}

// get serves GET path through h in memory; header holds request header keys and values in turn.
func get(t *testing.T, h http.Handler, path string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	_, hasRetryAfter := resp.Header["Retry-After"]
	return response{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), hasRetryAfter: hasRetryAfter,
		rejectedBy: resp.Header.Get("Fiberguard-Rejected-By"), body: rec.Body.String()}
}

func critical(r *http.Request) bool { return r.Header.Get("X-Priority") == "critical" }

func TestAdmitsBelowLower(t *testing.T) {
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(0.5)})
	h := s.Handler()(ok)
	for i := 0; i < 20; i++ {
		if r := get(t, h, "/"); r.code != 200 || r.body != "ok" || r.rejectedBy != "" || r.hasRetryAfter {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	if st := s.Status(); st.Admitted != 20 || st.Rejected != 0 || st.Probability != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRejectsAboveUpperWith503(t *testing.T) {
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(0.97)})
	h := s.Handler()(ok)
	r := get(t, h, "/")
	want := response{code: 503, retryAfter: "1", hasRetryAfter: true, rejectedBy: "loadshed/default",
		body: "loadshed: overloaded, retry later\n"}
	if r != want {
		t.Fatalf("got %+v; want %+v", r, want)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if ct := rec.Header().Values("Content-Type"); len(ct) != 1 || ct[0] != "text/plain; charset=utf-8" {
		t.Fatalf("Content-Type %q, want text/plain; charset=utf-8", ct)
	}
	if st := s.Status(); st.Rejected != 2 || st.Admitted != 0 || st.Probability != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRetryAfter(t *testing.T) {
	// One rule: whole seconds, rounded up, at least 1; none when negative; 0 in a Config is the default, 1s.
	for _, tt := range []struct {
		retryAfter time.Duration
		want       string // "" means no header
	}{
		{0, "1"}, {time.Nanosecond, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"},
		{30 * time.Second, "30"}, {-time.Nanosecond, ""}, {-time.Second, ""},
	} {
		s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), RetryAfter: tt.retryAfter})
		r := get(t, s.Handler()(ok), "/")
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
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), Name: "api"})
	if r := get(t, s.Handler()(ok), "/"); r.code != 503 || r.rejectedBy != "loadshed/api" {
		t.Fatalf("got %+v; want 503 with Fiberguard-Rejected-By loadshed/api", r)
	}
	if st := s.Status(); st.Name != "api" {
		t.Fatalf("Status().Name = %q, want api", st.Name)
	}
}

func TestCustomOnRejectSeesTheHeaders(t *testing.T) {
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), Name: "edge", RetryAfter: 5 * time.Second,
		OnReject: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "retry-after=%s by=%s", w.Header().Get("Retry-After"), w.Header().Get("Fiberguard-Rejected-By"))
		})})
	want := response{code: 429, retryAfter: "5", hasRetryAfter: true, rejectedBy: "loadshed/edge",
		body: "retry-after=5 by=loadshed/edge"}
	if r := get(t, s.Handler()(ok), "/"); r != want {
		t.Fatalf("got %+v; want %+v", r, want)
	}
}

// The rejection headers' values are shared by every rejected response; a handler that adds to them, or a
// middleware that edits the response header after the shedder, must not change what the next rejection sends.
func TestSharedHeaderValuesStayIntact(t *testing.T) {
	if core.HeaderRetryAfter != http.CanonicalHeaderKey(core.HeaderRetryAfter) ||
		core.HeaderRejectedBy != http.CanonicalHeaderKey(core.HeaderRejectedBy) {
		t.Fatal("the rejection header keys must be canonical: the middleware assigns them to the header map")
	}
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), Name: "api",
		OnReject: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Add("Retry-After", "7")
			w.Header().Add("Fiberguard-Rejected-By", "other")
			w.WriteHeader(http.StatusServiceUnavailable)
		})})
	h := s.Handler()(ok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Values("Retry-After"); len(got) != 2 || got[0] != "1" || got[1] != "7" {
		t.Fatalf("first rejection: Retry-After %q, want [1 7]", got)
	}
	for range 2 {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := rec.Header().Values("Retry-After"); len(got) != 2 || got[0] != "1" {
			t.Fatalf("next rejection: Retry-After %q, want [1 7]", got)
		}
		if got := rec.Header().Values("Fiberguard-Rejected-By"); len(got) != 2 || got[0] != "loadshed/api" {
			t.Fatalf("next rejection: Fiberguard-Rejected-By %q, want [loadshed/api other]", got)
		}
	}

	// The default OnReject's Content-Type, edited by a later middleware.
	d, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1)})
	h = d.Handler()(ok)
	for range 2 {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := rec.Header().Values("Content-Type"); len(got) != 1 || got[0] != "text/plain; charset=utf-8" {
			t.Fatalf("Content-Type %q", got)
		}
		rec.Header().Add("Content-Type", "x")
		rec.Header().Add("Retry-After", "x")
		rec.Header().Add("Fiberguard-Rejected-By", "x")
	}
}

func TestCriticalRequestsUseTheirOwnBand(t *testing.T) {
	s, reg := shedder(t, loadshed.Config{
		Signal:   coretest.NewFixedLoad(0.96),
		Critical: critical,
		Interval: time.Hour, // no sampler tick races with the requests below
	})
	h := s.Handler()(ok)
	if r := get(t, h, "/"); r.code != 503 {
		t.Fatalf("ordinary request at 0.96: %d, want 503", r.code)
	}
	if r := get(t, h, "/", "X-Priority", "critical"); r.code != 200 {
		t.Fatalf("critical request at 0.96: %d, want 200", r.code)
	}
	s2, reg2 := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1.0), Critical: critical, Interval: time.Hour})
	if r := get(t, s2.Handler()(ok), "/", "X-Priority", "critical"); r.code != 503 {
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
}

func TestDryRunCountsButServes(t *testing.T) {
	s, reg := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), DryRun: true})
	h := s.Handler()(ok)
	for i := 0; i < 5; i++ {
		if r := get(t, h, "/"); r.code != 200 || r.body != "ok" || r.rejectedBy != "" || r.hasRetryAfter {
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
	s, _ := shedder(t, loadshed.Config{
		Signal: coretest.NewFixedLoad(1),
		Next:   func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	})
	h := s.Handler()(ok)
	if r := get(t, h, "/healthz"); r.code != 200 || r.body != "ok" {
		t.Fatalf("/healthz got %+v", r)
	}
	if r := get(t, h, "/work"); r.code != 503 {
		t.Fatalf("/work got %d", r.code)
	}
	if st := s.Status(); st.Admitted+st.Rejected != 1 {
		t.Fatalf("bypassed request was counted: %+v", st)
	}
}

func TestProbabilityInTheBand(t *testing.T) {
	// p = 0.5; the decision itself is table-tested in the core, this checks the adapter draws fresh numbers.
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(0.925)})
	h := s.Handler()(ok)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	rejected := 0
	const n = 4000
	for i := 0; i < n; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == 503 {
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
	s := loadshed.NewShedder(loadshed.Config{Signal: coretest.NewFixedLoad(1), Smoothing: 1, Interval: time.Millisecond, Registerer: reg})
	h := s.Handler()(ok)
	var stop atomic.Bool
	var served, wrong atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			for !stop.Load() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				served.Add(1)
				if rec.Code != 503 {
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
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(0), Interval: time.Hour})
	var during atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /seen", func(w http.ResponseWriter, _ *http.Request) {
		during.Store(s.Status().InFlight)
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /fails", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.HandleFunc("GET /panics", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	shed := s.Handler()(mux)
	// A recover middleware before the shedder.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { _ = recover() }()
		shed.ServeHTTP(w, r)
	})
	for _, path := range []string{"/seen", "/fails", "/panics", "/missing"} {
		get(t, h, path)
		if n := s.Status().InFlight; n != 0 {
			t.Fatalf("after %s: %d in flight, want 0: every admitted request is done when its handler returns", path, n)
		}
	}
	if during.Load() != 1 {
		t.Fatalf("in flight during the handler: %d, want 1", during.Load())
	}
}

// Over a real server: the rejection on the wire, and a panic net/http's own recovery catches (no middleware
// recovers it) leaves nothing in flight.
func TestOverARealServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	load := coretest.NewFixedLoad(1)
	s, _ := shedder(t, loadshed.Config{Signal: load, Interval: time.Millisecond, Name: "api",
		Next: func(r *http.Request) bool { return r.URL.Path == "/healthz" }})
	defer s.Close() // before VerifyNone; Close is idempotent
	mux := http.NewServeMux()
	mux.Handle("GET /", ok)
	mux.HandleFunc("GET /panics", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	srv := httptest.NewUnstartedServer(s.Handler()(mux))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()

	fetch := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	resp, body := fetch("/")
	if resp.StatusCode != 503 || body != "loadshed: overloaded, retry later\n" || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Fiberguard-Rejected-By") != "loadshed/api" ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("rejection over the wire: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body = fetch("/healthz"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("/healthz at load 1: %d %q", resp.StatusCode, body)
	}

	load.Set(0)
	deadline := time.Now().Add(10 * time.Second)
	for s.Status().Probability != 0 { // the sampler reads the new load
		if time.Now().After(deadline) {
			t.Fatalf("the load never fell: %+v", s.Status())
		}
		time.Sleep(time.Millisecond)
	}
	if resp, body = fetch("/"); resp.StatusCode != 200 || body != "ok" || resp.Header.Get("Fiberguard-Rejected-By") != "" {
		t.Fatalf("at load 0: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if _, err := client.Get(srv.URL + "/panics"); err == nil {
		t.Fatal("a handler that panics with http.ErrAbortHandler: the response was not aborted")
	}
	// Done runs as the panic unwinds, before the server closes the connection the client saw end.
	for s.Status().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d in flight after the panicking request", s.Status().InFlight)
		}
		time.Sleep(time.Millisecond)
	}
	client.CloseIdleConnections()
}

func TestFirstReadingBeforeFirstRequest(t *testing.T) {
	// No sampler tick can have happened yet: the first reading is taken in NewShedder.
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), Interval: time.Hour})
	if st := s.Status(); st.Load != 1 || st.Probability != 1 || st.UpdatedAt == nil {
		t.Fatalf("status right after NewShedder: %+v", st)
	}
	if r := get(t, s.Handler()(ok), "/"); r.code != 503 {
		t.Fatalf("first request got %d, want 503", r.code)
	}
}

func TestContextDoneLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	h := loadshed.New(loadshed.Config{Context: ctx, Signal: coretest.NewFixedLoad(1), Interval: time.Millisecond, DisableMetrics: true})(ok)
	cancel()
	// The sampler is gone (VerifyNone above); requests are still answered with the last load.
	if r := get(t, h, "/"); r.code != 503 {
		t.Fatalf("request after the context ended: %d, want 503", r.code)
	}
}

func TestConfigDefault(t *testing.T) {
	// The adapter's defaults are the core's, with a net/http OnReject; a zero Config takes them all.
	d := loadshed.ConfigDefault
	want := core.Defaults[*http.Request](d.OnReject)
	if d.OnReject == nil || d.Lower != want.Lower || d.Upper != want.Upper || d.Interval != want.Interval ||
		d.Name != want.Name || d.RetryAfter != want.RetryAfter || d.Next != nil || d.Critical != nil {
		t.Fatalf("ConfigDefault %+v, want the core's defaults %+v", d, want)
	}
	// Halfway through the default band [0.90, 0.95]: probability one half.
	s := loadshed.NewShedder(loadshed.Config{Signal: coretest.NewFixedLoad(0.925), DisableMetrics: true})
	defer s.Close()
	if st := s.Status(); math.Abs(st.Probability-0.5) > 1e-9 || st.Name != "default" || st.IntervalSeconds != 0.02 {
		t.Fatalf("a zero Config: status %+v, want the default band, name and interval", st)
	}
	// ConfigDefault is read when NewShedder runs: a change to it applies to the Shedders built after it.
	saved := loadshed.ConfigDefault
	t.Cleanup(func() { loadshed.ConfigDefault = saved })
	loadshed.ConfigDefault.Name = "changed"
	s2 := loadshed.NewShedder(loadshed.Config{Signal: coretest.NewFixedLoad(0), DisableMetrics: true})
	defer s2.Close()
	if st := s2.Status(); st.Name != "changed" {
		t.Fatalf("Name %q after changing ConfigDefault.Name, want changed", st.Name)
	}
}

func TestConfigPanicsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		field string
		cfg   loadshed.Config
	}{
		{"Config.Upper", loadshed.Config{Lower: 0.9, Upper: 0.8}},
		{"Config.Name", loadshed.Config{Name: "api\r\nX-Injected: 1"}},
		{"Config.Smoothing", loadshed.Config{Smoothing: 2}},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "loadshed: "+tt.field+" must ") {
					t.Errorf("config %+v: panic %q, want one naming %s", tt.cfg, msg, tt.field)
				}
			}()
			tt.cfg.Signal = coretest.NewFixedLoad(0)
			tt.cfg.DisableMetrics = true
			_ = loadshed.NewShedder(tt.cfg)
		}()
	}
}

func TestRequestPathDoesNotAllocate(t *testing.T) {
	// Accepted, or rejected by the default OnReject (the benchmarks show the same with -benchmem). One recorder
	// serves every request, so what is counted is the middleware's, not the recorder's.
	for _, tc := range []struct {
		load float64
		want int
	}{{0.5, 200}, {1, 503}} {
		s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(tc.load), DisableMetrics: true})
		h := s.Handler()(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
		req, rec := httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder()
		h.ServeHTTP(rec, req) // the first response creates the recorder's header map
		if n := testing.AllocsPerRun(1000, func() { rec.Body.Reset(); h.ServeHTTP(rec, req) }); n != 0 {
			t.Errorf("load %v: %v allocations per request, want 0", tc.load, n)
		}
		if rec.Code != tc.want {
			t.Fatalf("load %v: status %d, want %d", tc.load, rec.Code, tc.want)
		}
	}
}

// Two Shedders of distinct names share one registry; a second of the same name does not panic.
func TestInstancesShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"a", "b", "b"} {
		s := loadshed.NewShedder(loadshed.Config{Signal: coretest.NewFixedLoad(0), Name: name, Registerer: reg})
		t.Cleanup(func() { _ = s.Close() })
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "fiberguard_loadshed_load" && len(mf.GetMetric()) != 2 {
			t.Fatalf("%d series of fiberguard_loadshed_load, want 2 (a and b)", len(mf.GetMetric()))
		}
	}
}

// A nil handler func is a zero OnReject: it takes the default's; a ConfigDefault without one cannot be served.
func TestNilHandlerFuncOnReject(t *testing.T) {
	s := loadshed.NewShedder(loadshed.Config{OnReject: http.HandlerFunc(nil), DisableMetrics: true,
		Signal: core.SignalFunc(func() (float64, error) { return 1, nil })})
	defer s.Close()
	rec := httptest.NewRecorder()
	s.Handler()(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || rec.Body.String() != "loadshed: overloaded, retry later\n" {
		t.Fatalf("OnReject http.HandlerFunc(nil): %d %q, want the default rejection", rec.Code, rec.Body.String())
	}
	saved := loadshed.ConfigDefault
	defer func() { loadshed.ConfigDefault = saved }()
	loadshed.ConfigDefault.OnReject = http.HandlerFunc(nil)
	defer func() {
		if msg, _ := recover().(string); msg != "loadshed: Config.OnReject must not be nil" {
			t.Fatalf("ConfigDefault.OnReject nil: panic %q, want one naming Config.OnReject", msg)
		}
	}()
	loadshed.NewShedder(loadshed.Config{DisableMetrics: true})
}
