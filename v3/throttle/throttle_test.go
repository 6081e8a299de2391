package throttle

import (
	"errors"
	"io"
	"math"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// response is what a test request got back.
type response struct {
	code          int
	retryAfter    string // "" when absent
	hasRetryAfter bool
	rejectedBy    string
	hasRejectedBy bool
	body          string
}

// get runs one GET through app.Test, without a timeout: a loaded machine is slow, not wrong.
func get(app *fiber.App, path string) (response, error) {
	resp, err := app.Test(httptest.NewRequest(fiber.MethodGet, path, nil), fiber.TestConfig{Timeout: 0})
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	_, hasRetryAfter := resp.Header[fiber.HeaderRetryAfter]
	_, hasRejectedBy := resp.Header["Fiberguard-Rejected-By"]
	return response{code: resp.StatusCode, retryAfter: resp.Header.Get(fiber.HeaderRetryAfter), hasRetryAfter: hasRetryAfter,
		rejectedBy: resp.Header.Get("Fiberguard-Rejected-By"), hasRejectedBy: hasRejectedBy, body: string(body)}, err
}

func mustGet(t *testing.T, app *fiber.App, path string) response {
	t.Helper()
	r, err := get(app, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return r
}

// blockingApp serves /block until release is closed, telling entered when a request is inside the handler.
func blockingApp(mw fiber.Handler, entered chan<- struct{}, release <-chan struct{}) *fiber.App {
	app := fiber.New()
	app.Use(mw)
	app.Get("/block", func(c fiber.Ctx) error {
		entered <- struct{}{}
		<-release
		return c.SendString("ok")
	})
	app.Get("/ok", func(c fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/health", func(c fiber.Ctx) error { return c.SendString("healthy") })
	app.Get("/panic", func(c fiber.Ctx) error { panic("handler bug") })
	app.Get("/error", func(c fiber.Ctx) error { return errors.New("handler error") })
	return app
}

// occupied serves a blockingApp behind th with one request parked in /block; release lets it finish and waits.
func occupied(th *Throttler) (app *fiber.App, release func()) {
	entered, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	app = blockingApp(th.Handler(), entered, unblock)
	go func() { defer close(done); _, _ = get(app, "/block") }()
	<-entered
	return app, func() { close(unblock); <-done }
}

func TestAdmissionRejectsBeyondTheWindow(t *testing.T) {
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 2, DisableMetrics: true})
	defer th.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	app := blockingApp(th.Handler(), entered, release)

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			r, err := get(app, "/block")
			if err != nil {
				t.Error(err)
			}
			codes[i] = r.code
		})
		<-entered
	}
	if th.Status().InFlight != 2 {
		t.Fatalf("in flight %d with two requests inside, want 2", th.Status().InFlight)
	}

	rej := mustGet(t, app, "/ok")
	if rej.code != fiber.StatusServiceUnavailable {
		t.Fatalf("third request: status %d, want 503", rej.code)
	}
	if rej.retryAfter != "1" {
		t.Fatalf("Retry-After %q, want \"1\"", rej.retryAfter)
	}

	close(release)
	wg.Wait()
	for i, c := range codes {
		if c != fiber.StatusOK {
			t.Fatalf("admitted request %d: status %d", i, c)
		}
	}
	if got := mustGet(t, app, "/ok").code; got != fiber.StatusOK {
		t.Fatalf("request after the window emptied: status %d", got)
	}
	s := th.Status()
	if s.InFlight != 0 || s.Admitted != 3 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 0 in flight, 3 admitted, 1 rejected", s)
	}
}

// rejectOne rejects one request with a window of 1 held by another and returns the rejection.
func rejectOne(t *testing.T, cfg Config) response {
	t.Helper()
	cfg.WindowMin, cfg.WindowMax, cfg.DisableMetrics = 1, 1, true
	th := NewThrottler(cfg)
	defer th.Close()
	app, release := occupied(th)
	defer release()
	return mustGet(t, app, "/ok")
}

func TestRejectionIsConfigurable(t *testing.T) {
	const defaultBody = "throttle: concurrency limit reached, retry later\n"
	tests := []struct {
		name       string
		cfg        Config
		wantStatus int
		wantRetry  string
		wantBody   string
	}{
		{"default", Config{}, 503, "1", defaultBody},
		{"status code", Config{OnReject: func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusTooManyRequests) }}, 429, "1", "Too Many Requests"},
		{"retry-after rounds up", Config{RetryAfter: 1500 * time.Millisecond}, 503, "2", defaultBody},
		{"negative retry-after omits the header", Config{RetryAfter: -1}, 503, "", defaultBody},
		{"handler", Config{OnReject: func(c fiber.Ctx) error {
			return c.Status(fiber.StatusTeapot).SendString("busy")
		}}, fiber.StatusTeapot, "1", "busy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := rejectOne(t, tt.cfg)
			if rej.code != tt.wantStatus {
				t.Errorf("status %d, want %d", rej.code, tt.wantStatus)
			}
			if rej.retryAfter != tt.wantRetry {
				t.Errorf("Retry-After %q, want %q", rej.retryAfter, tt.wantRetry)
			}
			if rej.body != tt.wantBody {
				t.Errorf("body %q, want %q", rej.body, tt.wantBody)
			}
		})
	}
}

// TestRejectionHeaders: Retry-After is ceil(RetryAfter / 1s), at least 1, none when negative; zero means the
// default 1s. Fiberguard-Rejected-By names the module and the instance.
func TestRejectionHeaders(t *testing.T) {
	tests := []struct {
		name           string
		cfg            Config
		wantRetry      string
		wantRejectedBy string
	}{
		{"zero is the default 1s", Config{}, "1", "throttle/default"},
		{"1ns rounds up to 1", Config{RetryAfter: time.Nanosecond}, "1", "throttle/default"},
		{"1s", Config{RetryAfter: time.Second}, "1", "throttle/default"},
		{"1.5s rounds up to 2", Config{RetryAfter: 1500 * time.Millisecond}, "2", "throttle/default"},
		{"2s", Config{RetryAfter: 2 * time.Second}, "2", "throttle/default"},
		{"the largest duration does not overflow", Config{RetryAfter: math.MaxInt64}, "9223372037", "throttle/default"},
		{"negative sends none", Config{RetryAfter: -time.Second}, "", "throttle/default"},
		{"custom name", Config{Name: "api"}, "1", "throttle/api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := rejectOne(t, tt.cfg)
			if rej.retryAfter != tt.wantRetry || rej.hasRetryAfter != (tt.wantRetry != "") {
				t.Errorf("Retry-After %q (present %t), want %q", rej.retryAfter, rej.hasRetryAfter, tt.wantRetry)
			}
			if rej.rejectedBy != tt.wantRejectedBy {
				t.Errorf("Fiberguard-Rejected-By %q, want %q", rej.rejectedBy, tt.wantRejectedBy)
			}
		})
	}
}

// TestOnRejectSeesTheHeaders: a custom OnReject runs after both headers are set, so it can read or change them.
func TestOnRejectSeesTheHeaders(t *testing.T) {
	var retry, by string
	rej := rejectOne(t, Config{Name: "api", RetryAfter: 3 * time.Second, OnReject: func(c fiber.Ctx) error {
		retry, by = c.GetRespHeader(fiber.HeaderRetryAfter), c.GetRespHeader("Fiberguard-Rejected-By")
		return c.Status(fiber.StatusTooManyRequests).JSON(fiber.Map{"retry_after": retry})
	}})
	if retry != "3" || by != "throttle/api" {
		t.Fatalf("OnReject saw Retry-After %q and Fiberguard-Rejected-By %q, want \"3\" and \"throttle/api\"", retry, by)
	}
	if rej.code != fiber.StatusTooManyRequests || rej.body != `{"retry_after":"3"}` {
		t.Fatalf("response %d %q, want OnReject's 429", rej.code, rej.body)
	}
	if rej.rejectedBy != "throttle/api" {
		t.Fatalf("Fiberguard-Rejected-By %q in the response, want \"throttle/api\"", rej.rejectedBy)
	}
}

// TestAdmittedRequestHasNoRejectionHeaders: only a rejection carries the headers.
func TestAdmittedRequestHasNoRejectionHeaders(t *testing.T) {
	th := NewThrottler(Config{DisableMetrics: true})
	defer th.Close()
	ok := mustGet(t, blockingApp(th.Handler(), nil, nil), "/ok")
	if ok.code != fiber.StatusOK || ok.hasRetryAfter || ok.hasRejectedBy {
		t.Errorf("admitted request: %+v, want 200 without Retry-After and Fiberguard-Rejected-By", ok)
	}
}

// TestSlotReleasedOnPanicAndError: the panicking request is served by app.Handler() directly, since app.Test
// serves on a goroutine of its own, where a panic would end the test binary.
func TestSlotReleasedOnPanicAndError(t *testing.T) {
	th := NewThrottler(Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true})
	defer th.Close()
	app := blockingApp(th.Handler(), nil, nil)

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the handler's panic did not propagate")
			}
		}()
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.Header.SetMethod(fiber.MethodGet)
		ctx.Request.SetRequestURI("/panic")
		app.Handler()(ctx)
	}()
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after a panicking handler, want 0", n)
	}
	if got := mustGet(t, app, "/error").code; got != fiber.StatusInternalServerError {
		t.Fatalf("erroring handler: status %d, want 500", got)
	}
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after an erroring handler, want 0", n)
	}
	if got := mustGet(t, app, "/ok").code; got != fiber.StatusOK {
		t.Fatalf("window of 1 after a panic and an error: status %d, want 200", got)
	}
}

func TestNextSkipsTheWindow(t *testing.T) {
	th := NewThrottler(Config{
		WindowMin: 1, WindowMax: 1, DisableMetrics: true,
		Next: func(c fiber.Ctx) bool { return c.Path() == "/health" },
	})
	defer th.Close()
	app, release := occupied(th)
	health := mustGet(t, app, "/health").code
	other := mustGet(t, app, "/ok").code
	release()
	if health != fiber.StatusOK || other != fiber.StatusServiceUnavailable {
		t.Fatalf("full window: /health %d (want 200, skipped), /ok %d (want 503)", health, other)
	}
}
