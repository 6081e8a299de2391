package glue

import (
	"context"
	"errors"
	"io"
	"log"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	throttlehttp "github.com/fiberguard/fiberguard/nethttp/throttle"
	throttlev2 "github.com/fiberguard/fiberguard/throttle"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	throttlev3 "github.com/fiberguard/fiberguard/v3/throttle"
	fiberv2 "github.com/gofiber/fiber/v2"
	logv2 "github.com/gofiber/fiber/v2/log"
	fiberv3 "github.com/gofiber/fiber/v3"
	logv3 "github.com/gofiber/fiber/v3/log"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

// throttleAdapter is the throttle adapter of one version.
type throttleAdapter[C throttlecore.Ctx, H ~func(C) error] struct {
	New           func(config ...throttlecore.Config[C, H]) H
	NewThrottler  func(config ...throttlecore.Config[C, H]) throttler[H]
	ConfigDefault defaults[throttlecore.Config[C, H]]
	// SetLogOutput is the version's log.SetOutput: where the adapter's log bridge writes; LogCase names the
	// case that proves it.
	SetLogOutput func(w io.Writer)
	LogCase      string
}

// throttler is a version's Throttler: the core's for Fiber, the net/http adapter's for net/http.
type throttler[H any] interface {
	Handler() H
	Status() throttlecore.Status
	Close() error
}

var (
	throttleV2 = throttleAdapter[*fiberv2.Ctx, fiberv2.Handler]{throttlev2.New,
		func(config ...throttlev2.Config) throttler[fiberv2.Handler] {
			return throttlev2.NewThrottler(config...)
		},
		fiberDefaults(&throttlev2.ConfigDefault), logv2.SetOutput, "LogsGoToFibersLog"}
	throttleV3 = throttleAdapter[fiberv3.Ctx, fiberv3.Handler]{throttlev3.New,
		func(config ...throttlev3.Config) throttler[fiberv3.Handler] {
			return throttlev3.NewThrottler(config...)
		},
		fiberDefaults(&throttlev3.ConfigDefault), logv3.SetOutput, "LogsGoToFibersLog"}
	throttleNet = throttleAdapter[*httpCtx, httpHandler]{
		func(config ...throttlecore.Config[*httpCtx, httpHandler]) httpHandler {
			return middleware(throttlehttp.New(convertConfigs[throttlehttp.Config](config)...))
		},
		func(config ...throttlecore.Config[*httpCtx, httpHandler]) throttler[httpHandler] {
			return throttleHTTP{throttlehttp.NewThrottler(convertConfigs[throttlehttp.Config](config)...)}
		},
		httpDefaults[throttlecore.Config[*httpCtx, httpHandler]](&throttlehttp.ConfigDefault), log.SetOutput,
		"LogsGoToTheStandardLog"}
)

// throttleHTTP is the net/http Throttler with its middleware in the net/http version's chain.
type throttleHTTP struct{ *throttlehttp.Throttler }

func (t throttleHTTP) Handler() httpHandler { return middleware(t.Throttler.Handler()) }

func TestThrottle(t *testing.T) {
	each(t, throttleV2, throttleV3, throttleNet,
		func(t *testing.T, a throttleAdapter[*fiberv2.Ctx, fiberv2.Handler]) { throttleSuite(t, v2, a) },
		func(t *testing.T, a throttleAdapter[fiberv3.Ctx, fiberv3.Handler]) { throttleSuite(t, v3, a) },
		func(t *testing.T, a throttleAdapter[*httpCtx, httpHandler]) { throttleSuite(t, netHTTP, a) })
}

// throttleSuite is every test of the throttle adapter through real Fiber apps of version fv.
func throttleSuite[C throttlecore.Ctx, H ~func(C) error](t *testing.T, fv version[C, H], a throttleAdapter[C, H]) {
	tt := throttleTest[C, H]{fv, a}
	t.Run("AdmissionRejectsBeyondTheWindow", tt.admissionRejectsBeyondTheWindow)
	t.Run("RejectionIsConfigurable", tt.rejectionIsConfigurable)
	t.Run("RejectionHeaders", tt.rejectionHeaders)
	t.Run("OnRejectSeesTheHeaders", tt.onRejectSeesTheHeaders)
	t.Run("AdmittedRequestHasNoRejectionHeaders", tt.admittedRequestHasNoRejectionHeaders)
	t.Run("SlotReleasedOnPanicAndError", tt.slotReleasedOnPanicAndError)
	t.Run("NextSkipsTheWindow", tt.nextSkipsTheWindow)
	t.Run("NewPanicsOnBadConfig", tt.newPanicsOnBadConfig)
	t.Run("ConfigDefault", tt.configDefault)
	t.Run(a.LogCase, tt.logsGoToTheAdaptersLog)
	t.Run("MetricsCountRequests", tt.metricsCountRequests)
	t.Run("NewStopsWithContext", tt.newStopsWithContext)
	t.Run("CloseConcurrentWithRequests", tt.closeConcurrentWithRequests)
	t.Run("HandlerAllocatesNothing", tt.handlerAllocatesNothing)
}

type throttleTest[C throttlecore.Ctx, H ~func(C) error] struct {
	fv version[C, H]
	a  throttleAdapter[C, H]
}

// throttleGet serves one GET of path by ap in memory, on the calling goroutine.
func throttleGet[C any, H ~func(C) error](ap app[C, H], path string) call {
	cl := ap.Call(path)
	cl.Do()
	return cl
}

// blockingApp is an app of the version behind mw with the routes of blockingRoutes.
func (tt throttleTest[C, H]) blockingApp(mw H, entered chan<- struct{}, release <-chan struct{}) app[C, H] {
	ap := tt.fv.newApp()
	tt.blockingRoutes(ap, mw, entered, release)
	return ap
}

// blockingRoutes puts mw in front of app's routes: /block serves until release is closed, telling entered when
// a request is inside the handler; /ok and /health answer at once, /panic panics and /error returns an error.
func (tt throttleTest[C, H]) blockingRoutes(app app[C, H], mw H, entered chan<- struct{}, release <-chan struct{}) {
	fv := tt.fv
	app.Use(mw)
	app.Get("/block", func(c C) error {
		entered <- struct{}{}
		<-release
		return fv.send(c, fiberv2.StatusOK, "ok")
	})
	app.Get("/ok", func(c C) error { return fv.send(c, fiberv2.StatusOK, "ok") })
	app.Get("/health", func(c C) error { return fv.send(c, fiberv2.StatusOK, "healthy") })
	app.Get("/panic", func(c C) error { panic("handler bug") })
	app.Get("/error", func(c C) error { return errors.New("handler error") })
}

// occupied serves the blocking routes by ap behind th with one request parked in /block; release lets it finish
// and waits.
func (tt throttleTest[C, H]) occupied(ap app[C, H], th throttler[H]) (release func()) {
	entered, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	tt.blockingRoutes(ap, th.Handler(), entered, unblock)
	block := ap.Call("/block")
	go func() { defer close(done); block.Do() }()
	<-entered
	return func() { close(unblock); <-done }
}

// rejectOne rejects one request with a window of 1 held by another and returns the rejection.
func (tt throttleTest[C, H]) rejectOne(t *testing.T, cfg throttlecore.Config[C, H]) call {
	t.Helper()
	cfg.WindowMin, cfg.WindowMax, cfg.DisableMetrics = 1, 1, true
	th := tt.a.NewThrottler(cfg)
	defer th.Close()
	ap := tt.fv.newApp()
	release := tt.occupied(ap, th)
	defer release()
	return throttleGet(ap, "/ok")
}

func (tt throttleTest[C, H]) admissionRejectsBeyondTheWindow(t *testing.T) {
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{WindowMin: 2, WindowMax: 2, DisableMetrics: true})
	defer th.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	h := tt.blockingApp(th.Handler(), entered, release)

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		block := h.Call("/block")
		wg.Go(func() { block.Do(); codes[i] = block.Status() })
		<-entered
	}
	if th.Status().InFlight != 2 {
		t.Fatalf("in flight %d with two requests inside, want 2", th.Status().InFlight)
	}

	rej := throttleGet(h, "/ok")
	if rej.Status() != fiberv2.StatusServiceUnavailable {
		t.Fatalf("third request: status %d, want 503", rej.Status())
	}
	if got, _ := rej.Header(fiberv2.HeaderRetryAfter); got != "1" {
		t.Fatalf("Retry-After %q, want \"1\"", got)
	}

	close(release)
	wg.Wait()
	for i, c := range codes {
		if c != fiberv2.StatusOK {
			t.Fatalf("admitted request %d: status %d", i, c)
		}
	}
	if got := throttleGet(h, "/ok").Status(); got != fiberv2.StatusOK {
		t.Fatalf("request after the window emptied: status %d", got)
	}
	s := th.Status()
	if s.InFlight != 0 || s.Admitted != 3 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 0 in flight, 3 admitted, 1 rejected", s)
	}
}

func (tt throttleTest[C, H]) rejectionIsConfigurable(t *testing.T) {
	const defaultBody, textPlain = "throttle: concurrency limit reached, retry later\n", "text/plain; charset=utf-8"
	send := tt.fv.send
	tests := []struct {
		name       string
		cfg        throttlecore.Config[C, H]
		wantStatus int
		wantRetry  string
		wantBody   string
		wantType   string // the default's; a custom OnReject's own (what the version's send sets)
	}{
		{"default", throttlecore.Config[C, H]{}, 503, "1", defaultBody, textPlain},
		{"status code", throttlecore.Config[C, H]{OnReject: func(c C) error {
			return send(c, fiberv2.StatusTooManyRequests, "Too Many Requests")
		}}, 429, "1", "Too Many Requests", tt.fv.sendType},
		{"retry-after rounds up", throttlecore.Config[C, H]{RetryAfter: 1500 * time.Millisecond}, 503, "2", defaultBody, textPlain},
		{"negative retry-after omits the header", throttlecore.Config[C, H]{RetryAfter: -1}, 503, "", defaultBody, textPlain},
		{"handler", throttlecore.Config[C, H]{OnReject: func(c C) error {
			return send(c, fiberv2.StatusTeapot, "busy")
		}}, fiberv2.StatusTeapot, "1", "busy", tt.fv.sendType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rej := tt.rejectOne(t, tc.cfg)
			if rej.Status() != tc.wantStatus {
				t.Errorf("status %d, want %d", rej.Status(), tc.wantStatus)
			}
			if got, _ := rej.Header(fiberv2.HeaderRetryAfter); got != tc.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tc.wantRetry)
			}
			if got := rej.Body(); got != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
			if got, _ := rej.Header("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
		})
	}
}

// rejectionHeaders: Retry-After is ceil(RetryAfter / 1s), at least 1, none when negative; zero means the default
// 1s. Fiberguard-Rejected-By names the module and the instance.
func (tt throttleTest[C, H]) rejectionHeaders(t *testing.T) {
	type config = throttlecore.Config[C, H]
	tests := []struct {
		name           string
		cfg            config
		wantRetry      string
		wantRejectedBy string
	}{
		{"zero is the default 1s", config{}, "1", "throttle/default"},
		{"1ns rounds up to 1", config{RetryAfter: time.Nanosecond}, "1", "throttle/default"},
		{"1s", config{RetryAfter: time.Second}, "1", "throttle/default"},
		{"1.5s rounds up to 2", config{RetryAfter: 1500 * time.Millisecond}, "2", "throttle/default"},
		{"2s", config{RetryAfter: 2 * time.Second}, "2", "throttle/default"},
		{"the largest duration does not overflow", config{RetryAfter: math.MaxInt64}, "9223372037", "throttle/default"},
		{"negative sends none", config{RetryAfter: -time.Second}, "", "throttle/default"},
		{"custom name", config{Name: "api"}, "1", "throttle/api"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rej := tt.rejectOne(t, tc.cfg)
			got, hasRetry := rej.Header(fiberv2.HeaderRetryAfter)
			if got != tc.wantRetry || hasRetry != (tc.wantRetry != "") {
				t.Errorf("Retry-After %q (present %t), want %q", got, hasRetry, tc.wantRetry)
			}
			if got, _ := rej.Header("Fiberguard-Rejected-By"); got != tc.wantRejectedBy {
				t.Errorf("Fiberguard-Rejected-By %q, want %q", got, tc.wantRejectedBy)
			}
		})
	}
}

// onRejectSeesTheHeaders: a custom OnReject runs after both headers are set, so it can read or change them.
func (tt throttleTest[C, H]) onRejectSeesTheHeaders(t *testing.T) {
	var retry, by string
	rej := tt.rejectOne(t, throttlecore.Config[C, H]{Name: "api", RetryAfter: 3 * time.Second, OnReject: func(c C) error {
		retry, by = tt.fv.respHeader(c, fiberv2.HeaderRetryAfter), tt.fv.respHeader(c, "Fiberguard-Rejected-By")
		return tt.fv.send(c, fiberv2.StatusTooManyRequests, `{"retry_after":"`+retry+`"}`)
	}})
	if retry != "3" || by != "throttle/api" {
		t.Fatalf("OnReject saw Retry-After %q and Fiberguard-Rejected-By %q, want \"3\" and \"throttle/api\"", retry, by)
	}
	if rej.Status() != fiberv2.StatusTooManyRequests || rej.Body() != `{"retry_after":"3"}` {
		t.Fatalf("response %d %q, want OnReject's 429", rej.Status(), rej.Body())
	}
	if got, _ := rej.Header("Fiberguard-Rejected-By"); got != "throttle/api" {
		t.Fatalf("Fiberguard-Rejected-By %q in the response, want \"throttle/api\"", got)
	}
}

// admittedRequestHasNoRejectionHeaders: only a rejection carries the headers.
func (tt throttleTest[C, H]) admittedRequestHasNoRejectionHeaders(t *testing.T) {
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{DisableMetrics: true})
	defer th.Close()
	ok := throttleGet(tt.blockingApp(th.Handler(), nil, nil), "/ok")
	if ok.Status() != fiberv2.StatusOK || ok.Body() != "ok" {
		t.Errorf("admitted request: %d %q, want 200 ok", ok.Status(), ok.Body())
	}
	for _, key := range []string{fiberv2.HeaderRetryAfter, "Fiberguard-Rejected-By"} {
		if v, present := ok.Header(key); present {
			t.Errorf("admitted request carries %s: %q", key, v)
		}
	}
}

// slotReleasedOnPanicAndError: the requests are served by app.Call, on the test's goroutine, so that the
// handler's panic reaches the test (app.Test serves on a goroutine of its own, where it would end the binary).
func (tt throttleTest[C, H]) slotReleasedOnPanicAndError(t *testing.T) {
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
	defer th.Close()
	h := tt.blockingApp(th.Handler(), nil, nil)

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the handler's panic did not propagate")
			}
		}()
		throttleGet(h, "/panic")
	}()
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after a panicking handler, want 0", n)
	}
	if got := throttleGet(h, "/error").Status(); got != fiberv2.StatusInternalServerError {
		t.Fatalf("erroring handler: status %d, want 500", got)
	}
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after an erroring handler, want 0", n)
	}
	if got := throttleGet(h, "/ok").Status(); got != fiberv2.StatusOK {
		t.Fatalf("window of 1 after a panic and an error: status %d, want 200", got)
	}
}

func (tt throttleTest[C, H]) nextSkipsTheWindow(t *testing.T) {
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{
		WindowMin: 1, WindowMax: 1, DisableMetrics: true,
		Next: func(c C) bool { return tt.fv.path(c) == "/health" },
	})
	defer th.Close()
	h := tt.fv.newApp()
	release := tt.occupied(h, th)
	health := throttleGet(h, "/health").Status()
	other := throttleGet(h, "/ok").Status()
	release()
	if health != fiberv2.StatusOK || other != fiberv2.StatusServiceUnavailable {
		t.Fatalf("full window: /health %d (want 200, skipped), /ok %d (want 503)", health, other)
	}
	if s := th.Status(); s.Admitted != 1 || s.Rejected != 1 {
		t.Fatalf("status %+v: the skipped request was counted", s)
	}
}

// newPanicsOnBadConfig: New validates the config it is given, with the core's messages (the core's tests hold
// the full table).
func (tt throttleTest[C, H]) newPanicsOnBadConfig(t *testing.T) {
	type config = throttlecore.Config[C, H]
	tests := []struct {
		name string
		cfg  config
		want string
	}{
		{"min > max", config{WindowMin: 20, WindowMax: 10}, "Config.WindowMax must be >= Config.WindowMin"},
		{"queries without URL", config{Queries: []string{"up"}}, "Config.PrometheusURL must be set"},
		{"trigger with neither", config{Triggers: []throttlecore.Trigger{{Name: "x"}}}, "Config.Triggers[0].Query"},
		{"negative timeout", config{Timeout: -time.Second}, "Config.Timeout"},
		{"name breaking the header", config{Name: "api\r\nSet-Cookie: x"}, "Config.Name must not contain control characters"},
	}
	for _, tc := range tests {
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
			tt.a.New(cfg)
		})
	}
}

// configDefault: the adapter's ConfigDefault holds the documented defaults and the default rejection, and New
// without a config uses it.
func (tt throttleTest[C, H]) configDefault(t *testing.T) {
	d := tt.a.ConfigDefault.get()
	if d.WindowMin != 10 || d.WindowMax != 1000 || d.Interval != 15*time.Second || d.Timeout != 5*time.Second ||
		d.RetryAfter != time.Second || d.Name != "default" || d.FailMode != throttlecore.FailOpen || d.OnReject == nil ||
		d.Next != nil || d.Registerer != nil || d.Context != nil {
		t.Fatalf("ConfigDefault %+v", d)
	}
	// Read when a Throttler is made: metrics off here keeps the default registry clean.
	tt.a.ConfigDefault.edit(t, func(d *throttlecore.Config[C, H]) { d.DisableMetrics, d.Name = true, "changed" })
	th := tt.a.NewThrottler()
	defer th.Close()
	if s := th.Status(); s.Name != "changed" || s.WindowMin != 10 || s.WindowMax != 1000 {
		t.Fatalf("NewThrottler() status %+v, want ConfigDefault's window and name", s)
	}
}

// logsGoToTheAdaptersLog: what the engine reports (an invalid query at error level, a failing trigger and a
// duplicate registration as warnings) is written by the adapter's logger: Fiber's, or the standard library's.
func (tt throttleTest[C, H]) logsGoToTheAdaptersLog(t *testing.T) {
	logs := &coretest.Buffer{}
	tt.a.SetLogOutput(logs)
	t.Cleanup(func() { tt.a.SetLogOutput(os.Stderr) })
	reg := prometheus.NewRegistry()
	failing := func(err error) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return false, err }
	}
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{Name: "api", Registerer: reg, Interval: time.Hour, Triggers: []throttlecore.Trigger{
		{Name: "typo", Func: failing(&promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"})},
		{Name: "down", Func: failing(errors.New("connection refused"))},
	}})
	defer th.Close()
	tt.a.NewThrottler(throttlecore.Config[C, H]{Name: "api", Registerer: reg}).Close()
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
			t.Errorf("the adapter's log lacks %q:\n%s", want, logs)
		}
	}
}

// metricsCountRequests: the middleware's decisions reach the metrics on Config.Registerer, labelled by
// Config.Name, and Close unregisters them. (The core's tests cover every metric.)
func (tt throttleTest[C, H]) metricsCountRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{Name: "api", Registerer: reg, WindowMin: 1, WindowMax: 1})
	defer th.Close()
	h := tt.fv.newApp()
	release := tt.occupied(h, th)
	throttleGet(h, "/ok") // rejected: the window of 1 is taken
	release()
	throttleGet(h, "/ok")

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
	th.Close()
	if n := len(coretest.Gather(t, reg)); n != 0 {
		t.Fatalf("%d series left after Close unregistered the metrics", n)
	}
}

func (tt throttleTest[C, H]) newStopsWithContext(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 100)
	h := tt.a.New(throttlecore.Config[C, H]{Context: ctx, DisableMetrics: true, Triggers: []throttlecore.Trigger{{
		Interval: time.Millisecond, Func: func(context.Context) (bool, error) {
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
	// The trigger goroutine ends with the context, without a Close; the middleware keeps admitting.
	if err := goleak.Find(before); err != nil {
		t.Fatal(err)
	}
	if got := throttleGet(tt.blockingApp(h, nil, nil), "/ok").Status(); got != fiberv2.StatusOK {
		t.Fatalf("request after the context ended: %d, want 200", got)
	}
}

// closeConcurrentWithRequests calls Close from several goroutines while requests flow: every request is answered,
// before and after Close, every Close returns nil once the trigger goroutine is gone, and the window keeps
// admitting.
func (tt throttleTest[C, H]) closeConcurrentWithRequests(t *testing.T) {
	before := goleak.IgnoreCurrent()
	reg := prometheus.NewRegistry()
	th := tt.a.NewThrottler(throttlecore.Config[C, H]{WindowMin: 2, WindowMax: 2, Registerer: reg, Triggers: []throttlecore.Trigger{{
		Interval: time.Millisecond, Func: func(context.Context) (bool, error) { return false, nil }}}})
	h := tt.blockingApp(th.Handler(), nil, nil)

	var answered, unexpected atomic.Int64
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for range 4 {
		cl := h.Call("/ok")
		workers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if cl.Do(); cl.Status() != fiberv2.StatusOK && cl.Status() != fiberv2.StatusServiceUnavailable {
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
	if got := throttleGet(h, "/ok").Status(); got != fiberv2.StatusOK {
		t.Fatalf("request after Close: status %d, want 200", got)
	}
	goleak.VerifyNone(t, before)
}

// handlerAllocatesNothing: neither an admitted request nor one rejected by the default OnReject allocates (the
// benchmarks' -benchmem figures, as a test that fails).
func (tt throttleTest[C, H]) handlerAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int // 0: a window of 1, held by a request parked in /block
		want   int
	}{{"admitted", 100, fiberv2.StatusOK}, {"rejected", 0, fiberv2.StatusServiceUnavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			th := tt.a.NewThrottler(throttlecore.Config[C, H]{WindowMin: max(tc.window, 1), WindowMax: max(tc.window, 1), DisableMetrics: true})
			defer th.Close()
			h := tt.fv.newApp()
			if tc.window == 0 {
				defer tt.occupied(h, th)()
			} else {
				tt.blockingRoutes(h, th.Handler(), nil, nil)
			}
			cl := h.Call("/ok")
			cl.Do() // the app's first request warms its pools
			if allocs := testing.AllocsPerRun(1000, cl.Do); allocs != 0 {
				t.Fatalf("%v allocations per request, want 0", allocs)
			}
			if got := cl.Status(); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// BenchmarkThrottle is the middleware's cost per request on each Fiber version, beside the app without it
// (baseline) and with a middleware that only calls Next (pass-through: the floor for any middleware).
//
//	cd e2e && go test -run '^$' -bench Throttle -benchmem ./glue/
func BenchmarkThrottle(b *testing.B) {
	b.Run("fiber-v2", func(b *testing.B) { throttleBench(b, v2, throttleV2) })
	b.Run("fiber-v3", func(b *testing.B) { throttleBench(b, v3, throttleV3) })
}

func throttleBench[C throttlecore.Ctx, H ~func(C) error](b *testing.B, fv version[C, H], a throttleAdapter[C, H]) {
	tt := throttleTest[C, H]{fv, a}
	// Without triggers each Throttler warns that it is a fixed limit: expected here.
	a.SetLogOutput(io.Discard)
	b.Cleanup(func() { a.SetLogOutput(os.Stderr) })
	run := func(b *testing.B, h fasthttp.RequestHandler, want int) {
		ctx := requestCtx("/ok")
		b.ReportAllocs()
		for b.Loop() {
			h(ctx)
		}
		if got := ctx.Response.StatusCode(); got != want {
			b.Fatalf("status %d, want %d", got, want)
		}
	}
	b.Run("baseline", func(b *testing.B) {
		app := fv.newFiberApp()
		app.Get("/ok", func(c C) error { return fv.send(c, fiberv2.StatusOK, "ok") })
		run(b, app.Handler(), fiberv2.StatusOK)
	})
	// blocking is a Fiber app behind mw with the blocking routes, as its fasthttp handler.
	blocking := func(mw H) fasthttp.RequestHandler {
		app := fv.newFiberApp()
		tt.blockingRoutes(app, mw, nil, nil)
		return app.Handler()
	}
	b.Run("pass-through", func(b *testing.B) {
		run(b, blocking(fv.next), fiberv2.StatusOK)
	})
	b.Run("admitted", func(b *testing.B) {
		th := a.NewThrottler(throttlecore.Config[C, H]{WindowMin: 100, WindowMax: 100, DisableMetrics: true})
		defer th.Close()
		run(b, blocking(th.Handler()), fiberv2.StatusOK)
	})
	// A request turned away by the default OnReject: 503, a text body, Retry-After and Fiberguard-Rejected-By.
	b.Run("rejected", func(b *testing.B) {
		th := a.NewThrottler(throttlecore.Config[C, H]{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
		defer th.Close()
		app := fv.newFiberApp()
		defer tt.occupied(app, th)()
		run(b, app.Handler(), fiberv2.StatusServiceUnavailable)
	})
	b.Run("admitted-parallel", func(b *testing.B) {
		th := a.NewThrottler(throttlecore.Config[C, H]{WindowMin: 1000, WindowMax: 1000, DisableMetrics: true})
		defer th.Close()
		h := blocking(th.Handler())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := requestCtx("/ok")
			for pb.Next() {
				h(ctx)
			}
		})
	})
}
