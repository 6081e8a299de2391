package throttle

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
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
	if th.Status().InFlight != 2 {
		t.Fatalf("in flight %d with two requests inside, want 2", th.Status().InFlight)
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
	s := th.Status()
	if s.InFlight != 0 || s.Admitted != 3 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 0 in flight, 3 admitted, 1 rejected", s)
	}
}

// rejectOne rejects one request with a window of 1 held by another and returns the rejection.
func rejectOne(t *testing.T, cfg Config) *fasthttp.RequestCtx {
	t.Helper()
	cfg.WindowMin, cfg.WindowMax, cfg.DisableMetrics = 1, 1, true
	th := NewThrottler(cfg)
	defer th.Close()
	h, release := occupied(th)
	defer release()
	return do(h, "/ok")
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
		{"status code", Config{OnReject: func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusTooManyRequests) }}, 429, "1", "Too Many Requests"},
		{"retry-after rounds up", Config{RetryAfter: 1500 * time.Millisecond}, 503, "2", defaultBody},
		{"negative retry-after omits the header", Config{RetryAfter: -1}, 503, "", defaultBody},
		{"handler", Config{OnReject: func(c *fiber.Ctx) error {
			return c.Status(fiber.StatusTeapot).SendString("busy")
		}}, fiber.StatusTeapot, "1", "busy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := rejectOne(t, tt.cfg)
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
			_, hasRetry := headerValue(&rej.Response, fiber.HeaderRetryAfter)
			if got := string(rej.Response.Header.Peek(fiber.HeaderRetryAfter)); got != tt.wantRetry || hasRetry != (tt.wantRetry != "") {
				t.Errorf("Retry-After %q (present %t), want %q", got, hasRetry, tt.wantRetry)
			}
			if got := string(rej.Response.Header.Peek("Fiberguard-Rejected-By")); got != tt.wantRejectedBy {
				t.Errorf("Fiberguard-Rejected-By %q, want %q", got, tt.wantRejectedBy)
			}
		})
	}
}

// headerValue returns the value of the response header key and whether the response has it at all.
func headerValue(resp *fasthttp.Response, key string) (string, bool) {
	for k, v := range resp.Header.All() {
		if string(k) == key {
			return string(v), true
		}
	}
	return "", false
}

// TestOnRejectSeesTheHeaders: a custom OnReject runs after both headers are set, so it can read or change them.
func TestOnRejectSeesTheHeaders(t *testing.T) {
	var retry, by string
	rej := rejectOne(t, Config{Name: "api", RetryAfter: 3 * time.Second, OnReject: func(c *fiber.Ctx) error {
		retry, by = c.GetRespHeader(fiber.HeaderRetryAfter), c.GetRespHeader("Fiberguard-Rejected-By")
		return c.Status(fiber.StatusTooManyRequests).JSON(fiber.Map{"retry_after": retry})
	}})
	if retry != "3" || by != "throttle/api" {
		t.Fatalf("OnReject saw Retry-After %q and Fiberguard-Rejected-By %q, want \"3\" and \"throttle/api\"", retry, by)
	}
	if rej.Response.StatusCode() != fiber.StatusTooManyRequests || string(rej.Response.Body()) != `{"retry_after":"3"}` {
		t.Fatalf("response %d %q, want OnReject's 429", rej.Response.StatusCode(), rej.Response.Body())
	}
	if got := string(rej.Response.Header.Peek("Fiberguard-Rejected-By")); got != "throttle/api" {
		t.Fatalf("Fiberguard-Rejected-By %q in the response, want \"throttle/api\"", got)
	}
}

// TestAdmittedRequestHasNoRejectionHeaders: only a rejection carries the headers.
func TestAdmittedRequestHasNoRejectionHeaders(t *testing.T) {
	th := NewThrottler(Config{DisableMetrics: true})
	defer th.Close()
	ok := do(blockingApp(th.Handler(), nil, nil).Handler(), "/ok")
	for _, key := range []string{fiber.HeaderRetryAfter, "Fiberguard-Rejected-By"} {
		if v, present := headerValue(&ok.Response, key); present {
			t.Errorf("admitted request carries %s: %q", key, v)
		}
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
	if n := th.Status().InFlight; n != 0 {
		t.Fatalf("in flight %d after a panicking handler, want 0", n)
	}
	if got := do(h, "/error").Response.StatusCode(); got != fiber.StatusInternalServerError {
		t.Fatalf("erroring handler: status %d, want 500", got)
	}
	if n := th.Status().InFlight; n != 0 {
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
