package throttle_test

import (
	"context"
	"errors"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/nethttp/throttle"
	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

const defaultBody = "throttle: concurrency limit reached, retry later\n"

// blockingMux serves /block until release is closed, telling entered when a request is inside the handler;
// /ok and /health answer at once, /panic panics and /fail answers 500.
func blockingMux(entered chan<- struct{}, release <-chan struct{}) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "healthy") })
	mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "handler error", http.StatusInternalServerError)
	})
	return mux
}

// serve runs one GET through h in memory.
func serve(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// occupied serves a blockingMux behind th with one request parked in /block; release lets it finish and waits.
func occupied(th *throttle.Throttler) (h http.Handler, release func()) {
	entered, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	h = th.Handler()(blockingMux(entered, unblock))
	go func() { defer close(done); serve(h, "/block") }()
	<-entered
	return h, func() { close(unblock); <-done }
}

// rejectOne rejects one request with a window of 1 held by another and returns the rejection.
func rejectOne(t *testing.T, cfg throttle.Config) *httptest.ResponseRecorder {
	t.Helper()
	cfg.WindowMin, cfg.WindowMax, cfg.DisableMetrics = 1, 1, true
	th := throttle.NewThrottler(cfg)
	defer th.Close()
	h, release := occupied(th)
	defer release()
	return serve(h, "/ok")
}

// header returns the response header key's only value and whether the response has it at all.
func header(rec *httptest.ResponseRecorder, key string) (string, bool) {
	v, ok := rec.Result().Header[key]
	if !ok || len(v) == 0 {
		return "", ok
	}
	return v[0], true
}

func TestAdmissionRejectsBeyondTheWindow(t *testing.T) {
	th := throttle.NewThrottler(throttle.Config{WindowMin: 2, WindowMax: 2, DisableMetrics: true})
	defer th.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	h := th.Handler()(blockingMux(entered, release))

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() { codes[i] = serve(h, "/block").Code })
		<-entered
	}
	if th.Status().InFlight != 2 {
		t.Fatalf("in flight %d with two requests inside, want 2", th.Status().InFlight)
	}
	rej := serve(h, "/ok")
	if rej.Code != http.StatusServiceUnavailable {
		t.Fatalf("third request: status %d, want 503", rej.Code)
	}
	if got, _ := header(rej, "Retry-After"); got != "1" {
		t.Fatalf("Retry-After %q, want \"1\"", got)
	}
	close(release)
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("admitted request %d: status %d", i, c)
		}
	}
	if got := serve(h, "/ok").Code; got != http.StatusOK {
		t.Fatalf("request after the window emptied: status %d", got)
	}
	if s := th.Status(); s.InFlight != 0 || s.Admitted != 3 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 0 in flight, 3 admitted, 1 rejected", s)
	}
}

func TestRejectionIsConfigurable(t *testing.T) {
	answer := func(code int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		})
	}
	for _, tc := range []struct {
		name       string
		cfg        throttle.Config
		wantStatus int
		wantRetry  string
		wantBody   string
		wantType   string // the default's; a custom OnReject's own (none here)
	}{
		{"default", throttle.Config{}, 503, "1", defaultBody, "text/plain; charset=utf-8"},
		{"status code", throttle.Config{OnReject: answer(http.StatusTooManyRequests, "Too Many Requests")}, 429, "1",
			"Too Many Requests", ""},
		{"retry-after rounds up", throttle.Config{RetryAfter: 1500 * time.Millisecond}, 503, "2", defaultBody, "text/plain; charset=utf-8"},
		{"negative retry-after omits the header", throttle.Config{RetryAfter: -1}, 503, "", defaultBody, "text/plain; charset=utf-8"},
		{"handler", throttle.Config{OnReject: answer(http.StatusTeapot, "busy")}, http.StatusTeapot, "1", "busy", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rej := rejectOne(t, tc.cfg)
			if rej.Code != tc.wantStatus {
				t.Errorf("status %d, want %d", rej.Code, tc.wantStatus)
			}
			if got, _ := header(rej, "Retry-After"); got != tc.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tc.wantRetry)
			}
			if got := rej.Body.String(); got != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
			if got := rej.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
		})
	}
}

// Retry-After is ceil(RetryAfter / 1s), at least 1, none when negative; zero means the default 1s.
// Fiberguard-Rejected-By names the module and the instance.
func TestRejectionHeaders(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cfg            throttle.Config
		wantRetry      string
		wantRejectedBy string
	}{
		{"zero is the default 1s", throttle.Config{}, "1", "throttle/default"},
		{"1ns rounds up to 1", throttle.Config{RetryAfter: time.Nanosecond}, "1", "throttle/default"},
		{"1s", throttle.Config{RetryAfter: time.Second}, "1", "throttle/default"},
		{"1.5s rounds up to 2", throttle.Config{RetryAfter: 1500 * time.Millisecond}, "2", "throttle/default"},
		{"2s", throttle.Config{RetryAfter: 2 * time.Second}, "2", "throttle/default"},
		{"the largest duration does not overflow", throttle.Config{RetryAfter: math.MaxInt64}, "9223372037", "throttle/default"},
		{"negative sends none", throttle.Config{RetryAfter: -time.Second}, "", "throttle/default"},
		{"custom name", throttle.Config{Name: "api"}, "1", "throttle/api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rej := rejectOne(t, tc.cfg)
			got, hasRetry := header(rej, "Retry-After")
			if got != tc.wantRetry || hasRetry != (tc.wantRetry != "") {
				t.Errorf("Retry-After %q (present %t), want %q", got, hasRetry, tc.wantRetry)
			}
			if got, _ := header(rej, "Fiberguard-Rejected-By"); got != tc.wantRejectedBy {
				t.Errorf("Fiberguard-Rejected-By %q, want %q", got, tc.wantRejectedBy)
			}
		})
	}
}

// A custom OnReject runs after both headers are set, so it can read or change them.
func TestOnRejectSeesTheHeaders(t *testing.T) {
	var retry, by string
	rej := rejectOne(t, throttle.Config{Name: "api", RetryAfter: 3 * time.Second,
		OnReject: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			retry, by = w.Header().Get("Retry-After"), w.Header().Get("Fiberguard-Rejected-By")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"retry_after":"`+retry+`"}`)
		})})
	if retry != "3" || by != "throttle/api" {
		t.Fatalf("OnReject saw Retry-After %q and Fiberguard-Rejected-By %q, want \"3\" and \"throttle/api\"", retry, by)
	}
	if rej.Code != http.StatusTooManyRequests || rej.Body.String() != `{"retry_after":"3"}` {
		t.Fatalf("response %d %q, want OnReject's 429", rej.Code, rej.Body)
	}
	if got, _ := header(rej, "Fiberguard-Rejected-By"); got != "throttle/api" {
		t.Fatalf("Fiberguard-Rejected-By %q in the response, want \"throttle/api\"", got)
	}
}

// The rejection headers' values are shared by every rejected response; a handler that adds to them, or a
// middleware that edits the response header after the throttle, must not change what the next rejection sends.
func TestSharedHeaderValuesStayIntact(t *testing.T) {
	if core.HeaderRetryAfter != http.CanonicalHeaderKey(core.HeaderRetryAfter) ||
		core.HeaderRejectedBy != http.CanonicalHeaderKey(core.HeaderRejectedBy) {
		t.Fatal("the rejection header keys must be canonical: the middleware assigns them to the header map")
	}
	th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true, Name: "api"})
	defer th.Close()
	h, release := occupied(th)
	defer release()
	for range 3 {
		rec := serve(h, "/ok")
		for key, want := range map[string]string{"Retry-After": "1", "Fiberguard-Rejected-By": "throttle/api",
			"Content-Type": "text/plain; charset=utf-8"} {
			if got := rec.Header().Values(key); len(got) != 1 || got[0] != want {
				t.Fatalf("%s %q, want [%s]", key, got, want)
			}
			rec.Header().Add(key, "x") // a later middleware adding to the response's header
		}
	}
}

// Only a rejection carries the headers.
func TestAdmittedRequestHasNoRejectionHeaders(t *testing.T) {
	th := throttle.NewThrottler(throttle.Config{DisableMetrics: true})
	defer th.Close()
	rec := serve(th.Handler()(blockingMux(nil, nil)), "/ok")
	if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Errorf("admitted request: %d %q, want 200 ok", rec.Code, rec.Body)
	}
	for _, key := range []string{"Retry-After", "Fiberguard-Rejected-By"} {
		if v, present := header(rec, key); present {
			t.Errorf("admitted request carries %s: %q", key, v)
		}
	}
}

// The slot comes back when the handler panics (the panic reaches the caller) or answers an error.
func TestSlotReleasedOnPanicAndError(t *testing.T) {
	th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
	defer th.Close()
	h := th.Handler()(blockingMux(nil, nil))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the handler's panic did not propagate")
			}
		}()
		serve(h, "/panic")
	}()
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after a panicking handler, want 0", n)
	}
	if got := serve(h, "/fail").Code; got != http.StatusInternalServerError {
		t.Fatalf("failing handler: status %d, want 500", got)
	}
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after a failing handler, want 0", n)
	}
	if got := serve(h, "/ok").Code; got != http.StatusOK {
		t.Fatalf("window of 1 after a panic and an error: status %d, want 200", got)
	}
}

func TestNextSkipsTheWindow(t *testing.T) {
	th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true,
		Next: func(r *http.Request) bool { return r.URL.Path == "/health" }})
	defer th.Close()
	h, release := occupied(th)
	health := serve(h, "/health").Code
	other := serve(h, "/ok").Code
	release()
	if health != http.StatusOK || other != http.StatusServiceUnavailable {
		t.Fatalf("full window: /health %d (want 200, skipped), /ok %d (want 503)", health, other)
	}
	if s := th.Status(); s.Admitted != 1 || s.Rejected != 1 {
		t.Fatalf("status %+v: the skipped request was counted", s)
	}
}

// Over a real server: a window of 1 held by a request in flight rejects the next one on the wire, and a panic
// net/http's own recovery catches (no middleware recovers it) gives the slot back.
func TestOverARealServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true, Name: "api"})
	defer th.Close()
	entered, unblock := make(chan struct{}), make(chan struct{})
	mux := blockingMux(entered, unblock)
	mux.HandleFunc("GET /abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	srv := httptest.NewUnstartedServer(th.Handler()(mux))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()

	fetch := func(path string) (*http.Response, string, error) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	blocked := make(chan error, 1)
	go func() {
		resp, body, err := fetch("/block")
		if err == nil && (resp.StatusCode != 200 || body != "ok") {
			err = errors.New("the parked request got " + resp.Status + " " + body)
		}
		blocked <- err
	}()
	<-entered
	resp, body, err := fetch("/ok")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || body != defaultBody || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Fiberguard-Rejected-By") != "throttle/api" ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("rejection over the wire: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	close(unblock)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}

	if _, _, err := fetch("/abort"); err == nil {
		t.Fatal("a handler that panics with http.ErrAbortHandler: the response was not aborted")
	}
	// The slot comes back as the panic unwinds, before the server closes the connection the client saw end.
	coretest.WaitFor(t, func() bool { return th.Status().InFlight == 0 })
	if resp, body, err = fetch("/ok"); err != nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("after the aborted request: %v %v %q", err, resp, body)
	}
	client.CloseIdleConnections()
}

// New validates the config it is given, with the core's messages (the core's tests hold the full table).
func TestNewPanicsOnBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  throttle.Config
		want string
	}{
		{"min > max", throttle.Config{WindowMin: 20, WindowMax: 10}, "Config.WindowMax must be >= Config.WindowMin"},
		{"queries without URL", throttle.Config{Queries: []string{"up"}}, "Config.PrometheusURL must be set"},
		{"trigger with neither", throttle.Config{Triggers: []core.Trigger{{Name: "x"}}}, "Config.Triggers[0].Query"},
		{"negative timeout", throttle.Config{Timeout: -time.Second}, "Config.Timeout"},
		{"name breaking the header", throttle.Config{Name: "api\r\nSet-Cookie: x"}, "Config.Name must not contain control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.HasPrefix(msg, "throttle: Config.") || !strings.Contains(msg, " must ") || !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %v, want a message naming %q", r, tc.want)
				}
			}()
			cfg := tc.cfg
			cfg.DisableMetrics = true
			throttle.New(cfg)
		})
	}
}

// The adapter's ConfigDefault holds the documented defaults and the default rejection, and New without a config
// uses it, read when the Throttler is made.
func TestConfigDefault(t *testing.T) {
	d := throttle.ConfigDefault
	if d.WindowMin != 10 || d.WindowMax != 1000 || d.Interval != 15*time.Second || d.Timeout != 5*time.Second ||
		d.RetryAfter != time.Second || d.Name != "default" || d.FailMode != core.FailOpen || d.OnReject == nil ||
		d.Next != nil || d.Registerer != nil || d.Context != nil {
		t.Fatalf("ConfigDefault %+v", d)
	}
	saved := d
	t.Cleanup(func() { throttle.ConfigDefault = saved })
	// Metrics off here keeps the default registry clean.
	throttle.ConfigDefault.DisableMetrics = true
	throttle.ConfigDefault.Name = "changed"
	th := throttle.NewThrottler()
	defer th.Close()
	if s := th.Status(); s.Name != "changed" || s.WindowMin != 10 || s.WindowMax != 1000 {
		t.Fatalf("NewThrottler() status %+v, want ConfigDefault's window and name", s)
	}
}

// What the engine reports (an invalid query at error level, a failing trigger and a duplicate registration as
// warnings) is written by the standard library's logger.
func TestLogsGoToTheStandardLog(t *testing.T) {
	logs := &coretest.Buffer{}
	out := log.Writer()
	log.SetOutput(logs)
	t.Cleanup(func() { log.SetOutput(out) })
	reg := prometheus.NewRegistry()
	failing := func(err error) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return false, err }
	}
	th := throttle.NewThrottler(throttle.Config{Name: "api", Registerer: reg, Interval: time.Hour, Triggers: []core.Trigger{
		{Name: "typo", Func: failing(&promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"})},
		{Name: "down", Func: failing(errors.New("connection refused"))},
	}})
	defer th.Close()
	throttle.NewThrottler(throttle.Config{Name: "api", Registerer: reg}).Close()
	coretest.WaitFor(t, func() bool {
		s := th.Status()
		return s.Triggers[0].Evaluations == 1 && s.Triggers[1].Evaluations == 1
	})
	for _, want := range []string{
		`[Error] throttle: trigger "typo": its function reports an invalid query`,
		`[Warn] throttle: trigger "down": connection refused`,
		`[Warn] throttle "api": metrics already registered`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the standard log lacks %q:\n%s", want, logs)
		}
	}
}

// The middleware's decisions reach the metrics on Config.Registerer, labelled by Config.Name, and Close
// unregisters them. (The core's tests cover every metric.)
func TestMetricsCountRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	th := throttle.NewThrottler(throttle.Config{Name: "api", Registerer: reg, WindowMin: 1, WindowMax: 1})
	defer th.Close()
	h, release := occupied(th)
	serve(h, "/ok") // rejected: the window of 1 is taken
	release()
	serve(h, "/ok")
	got := coretest.Gather(t, reg)
	for name, want := range map[string]float64{
		`fiberguard_throttle_requests_total{decision="admitted",name="api"}`: 2,
		`fiberguard_throttle_requests_total{decision="rejected",name="api"}`: 1,
		`fiberguard_throttle_in_flight{name="api"}`:                          0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", name, v, ok, want)
		}
	}
	_ = th.Close()
	if n := len(coretest.Gather(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close unregistered the metrics", n)
	}
}

func TestNewStopsWithContext(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 100)
	mw := throttle.New(throttle.Config{Context: ctx, DisableMetrics: true, Triggers: []core.Trigger{{
		Interval: time.Millisecond, Func: func(context.Context) (bool, error) {
			select {
			case calls <- struct{}{}:
			default:
			}
			return false, nil
		}}}})
	<-calls
	cancel()
	// The trigger goroutine ends with the context, without a Close; the middleware keeps admitting.
	if err := goleak.Find(before); err != nil {
		t.Fatal(err)
	}
	if got := serve(mw(blockingMux(nil, nil)), "/ok").Code; got != http.StatusOK {
		t.Fatalf("request after the context ended: %d, want 200", got)
	}
}

// Close from several goroutines while requests flow: every request is answered, before and after Close, every
// Close returns nil once the trigger goroutine is gone, and the window keeps admitting.
func TestCloseConcurrentWithRequests(t *testing.T) {
	before := goleak.IgnoreCurrent()
	reg := prometheus.NewRegistry()
	th := throttle.NewThrottler(throttle.Config{WindowMin: 2, WindowMax: 2, Registerer: reg, Triggers: []core.Trigger{{
		Interval: time.Millisecond, Func: func(context.Context) (bool, error) { return false, nil }}}})
	h := th.Handler()(blockingMux(nil, nil))

	var answered, unexpected atomic.Int64
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for range 4 {
		workers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code := serve(h, "/ok").Code; code != http.StatusOK && code != http.StatusServiceUnavailable {
					unexpected.Add(1)
				}
				answered.Add(1)
			}
		})
	}
	coretest.WaitFor(t, func() bool { return answered.Load() >= 100 })
	var closers sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		closers.Go(func() { errs <- th.Close() })
	}
	closers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Close returned %v", err)
		}
	}
	if n := len(coretest.Gather(t, reg)); n != 0 {
		t.Fatalf("%d series left once Close returned", n)
	}
	closed := answered.Load()
	coretest.WaitFor(t, func() bool { return answered.Load() >= closed+100 })
	close(stop)
	workers.Wait()

	if n := unexpected.Load(); n != 0 {
		t.Fatalf("%d requests answered with neither 200 nor 503", n)
	}
	s := th.Status()
	if s.Admitted+s.Rejected != uint64(answered.Load()) || s.InFlight != 0 {
		t.Fatalf("status %+v after %d requests: want every request counted and none in flight", s, answered.Load())
	}
	if got := serve(h, "/ok").Code; got != http.StatusOK {
		t.Fatalf("request after Close: status %d, want 200", got)
	}
	goleak.VerifyNone(t, before)
}

// Neither an admitted request nor one rejected by the default OnReject allocates (the benchmarks' -benchmem
// figures, as a test that fails). One recorder serves every request, so what is counted is the middleware's, not
// the recorder's.
func TestHandlerAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int // 0: a window of 1, held by a request parked in /block
		want   int
	}{{"admitted", 100, http.StatusOK}, {"rejected", 0, http.StatusServiceUnavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			th := throttle.NewThrottler(throttle.Config{WindowMin: max(tc.window, 1), WindowMax: max(tc.window, 1), DisableMetrics: true})
			defer th.Close()
			h, release := th.Handler()(blockingMux(nil, nil)), func() {}
			if tc.window == 0 {
				h, release = occupied(th)
			}
			defer release()
			req, rec := httptest.NewRequest(http.MethodGet, "/ok", nil), httptest.NewRecorder()
			h.ServeHTTP(rec, req) // the first response creates the recorder's header map
			if allocs := testing.AllocsPerRun(1000, func() { rec.Body.Reset(); h.ServeHTTP(rec, req) }); allocs != 0 {
				t.Fatalf("%v allocations per request, want 0", allocs)
			}
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d", rec.Code, tc.want)
			}
		})
	}
}

// A nil handler func is a zero OnReject: it takes the default's; a ConfigDefault without one cannot be served.
func TestNilHandlerFuncOnReject(t *testing.T) {
	saved := throttle.ConfigDefault
	defer func() { throttle.ConfigDefault = saved }()
	throttle.ConfigDefault.OnReject = http.HandlerFunc(nil)
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "Config.OnReject must not be nil") {
			t.Fatalf("ConfigDefault.OnReject nil: panic %q, want one naming Config.OnReject", msg)
		}
	}()
	throttle.NewThrottler(throttle.Config{OnReject: http.HandlerFunc(nil), DisableMetrics: true})
}
