package core

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeCtx is a request context: its Next runs next (nil: nothing), its Set records the response headers.
type fakeCtx struct {
	next    func() error
	nexts   int
	headers map[string]string
}

func (c *fakeCtx) Next() error {
	c.nexts++
	if c.next == nil {
		return nil
	}
	return c.next()
}

func (c *fakeCtx) Set(key, val string) {
	if c.headers == nil {
		c.headers = map[string]string{}
	}
	c.headers[key] = val
}

type fakeHandler func(*fakeCtx) error

var errRejected = errors.New("rejected")

// fakeDefaults are an adapter's ConfigDefault: OnReject answers errRejected.
func fakeDefaults() Config[*fakeCtx, fakeHandler] {
	return Defaults[*fakeCtx, fakeHandler](func(*fakeCtx) error { return errRejected })
}

func newFakeThrottler(t *testing.T, cfg Config[*fakeCtx, fakeHandler]) (*Throttler[*fakeCtx, fakeHandler], fakeHandler) {
	t.Helper()
	cfg.DisableMetrics = true
	th := NewThrottler(fakeDefaults(), &logBuffer{}, cfg)
	t.Cleanup(func() { th.Close() })
	return th, th.Handler()
}

// TestThrottlerAdmitsIntoTheWindow: a request inside the window runs the chain with a slot taken and gives it
// back; one beyond it gets the rejection headers and OnReject instead of the chain.
func TestThrottlerAdmitsIntoTheWindow(t *testing.T) {
	th, h := newFakeThrottler(t, Config[*fakeCtx, fakeHandler]{WindowMin: 1, WindowMax: 1})
	var inner *fakeCtx
	var innerErr error
	outer := &fakeCtx{next: func() error {
		if n := th.Status().InFlight; n != 1 {
			t.Errorf("in flight %d inside the chain, want 1", n)
		}
		inner = &fakeCtx{}
		innerErr = h(inner)
		return nil
	}}
	if err := h(outer); err != nil || outer.nexts != 1 || len(outer.headers) != 0 {
		t.Fatalf("admitted: err %v, %d calls of Next, headers %v; want nil, 1, none", err, outer.nexts, outer.headers)
	}
	if !errors.Is(innerErr, errRejected) || inner.nexts != 0 {
		t.Fatalf("beyond the window: err %v, %d calls of Next; want OnReject's error and none", innerErr, inner.nexts)
	}
	if inner.headers[HeaderRetryAfter] != "1" || inner.headers[HeaderRejectedBy] != "throttle/default" {
		t.Fatalf("rejection headers %v", inner.headers)
	}
	if s := th.Status(); s.InFlight != 0 || s.Admitted != 1 || s.Rejected != 1 {
		t.Fatalf("status %+v, want 0 in flight, 1 admitted, 1 rejected", s)
	}
}

// TestThrottlerRejectionHeaders: the headers come from the config, Retry-After none when negative; OnReject
// runs after both are set.
func TestThrottlerRejectionHeaders(t *testing.T) {
	for _, tt := range []struct {
		name      string
		cfg       Config[*fakeCtx, fakeHandler]
		wantRetry string // "": absent
		wantBy    string
	}{
		{"defaults", Config[*fakeCtx, fakeHandler]{}, "1", "throttle/default"},
		{"rounded up", Config[*fakeCtx, fakeHandler]{RetryAfter: 1500 * time.Millisecond, Name: "api"}, "2", "throttle/api"},
		{"negative", Config[*fakeCtx, fakeHandler]{RetryAfter: -1}, "", "throttle/default"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen map[string]string
			cfg := tt.cfg
			cfg.WindowMin, cfg.WindowMax = 1, 1
			cfg.OnReject = func(c *fakeCtx) error {
				seen = map[string]string{}
				for k, v := range c.headers {
					seen[k] = v
				}
				return errRejected
			}
			_, h := newFakeThrottler(t, cfg)
			var rej *fakeCtx
			_ = h(&fakeCtx{next: func() error { rej = &fakeCtx{}; return h(rej) }})
			retry, hasRetry := seen[HeaderRetryAfter]
			if retry != tt.wantRetry || hasRetry != (tt.wantRetry != "") || seen[HeaderRejectedBy] != tt.wantBy {
				t.Fatalf("OnReject saw %v, want Retry-After %q and %s %q", seen, tt.wantRetry, HeaderRejectedBy, tt.wantBy)
			}
		})
	}
}

// TestThrottlerNextSkips: a request Next selects runs the chain without a slot, even with the window full.
func TestThrottlerNextSkips(t *testing.T) {
	th, h := newFakeThrottler(t, Config[*fakeCtx, fakeHandler]{WindowMin: 1, WindowMax: 1,
		Next: func(c *fakeCtx) bool { return c.headers["skip"] == "yes" }})
	var skipped *fakeCtx
	_ = h(&fakeCtx{next: func() error {
		skipped = &fakeCtx{headers: map[string]string{"skip": "yes"}}
		return h(skipped)
	}})
	if skipped.nexts != 1 || len(skipped.headers) != 1 {
		t.Fatalf("skipped request: %d calls of Next, headers %v; want 1 and no rejection header", skipped.nexts, skipped.headers)
	}
	if s := th.Status(); s.Admitted != 1 || s.Rejected != 0 {
		t.Fatalf("status %+v: a skipped request was counted", s)
	}
}

// TestThrottlerReleasesOnPanicAndError: the slot comes back when the chain panics or fails, and the chain's
// error is the middleware's.
func TestThrottlerReleasesOnPanicAndError(t *testing.T) {
	th, h := newFakeThrottler(t, Config[*fakeCtx, fakeHandler]{WindowMin: 1, WindowMax: 1})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the chain's panic did not propagate")
			}
		}()
		_ = h(&fakeCtx{next: func() error { panic("handler bug") }})
	}()
	failed := errors.New("handler error")
	if err := h(&fakeCtx{next: func() error { return failed }}); !errors.Is(err, failed) {
		t.Fatalf("error %v, want the chain's", err)
	}
	if s := th.Status(); s.InFlight != 0 || s.Admitted != 2 {
		t.Fatalf("status %+v, want 2 admitted and none in flight", s)
	}
	if err := h(&fakeCtx{}); err != nil {
		t.Fatalf("window of 1 after a panic and an error: %v", err)
	}
}

// TestNewThrottlerConfig: no config means the defaults; a config's zero fields come from them; an invalid one
// panics naming the field.
func TestNewThrottlerConfig(t *testing.T) {
	d := fakeDefaults()
	d.WindowMin, d.WindowMax, d.Name, d.DisableMetrics = 3, 3, "given", true
	th := NewThrottler(d, &logBuffer{})
	defer th.Close()
	if s := th.Status(); s.Name != "given" || s.WindowMax != 3 {
		t.Fatalf("no config: status %+v, want the defaults'", s)
	}
	th2, _ := newFakeThrottler(t, Config[*fakeCtx, fakeHandler]{WindowMax: 4})
	if s := th2.Status(); s.Name != "default" || s.WindowMin != 4 || s.WindowMax != 4 {
		t.Fatalf("WindowMax 4 alone: status %+v, want the default name and a window of 4", s)
	}
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "throttle: Config.WindowMax must be >= Config.WindowMin") {
			t.Fatalf("panic %q, want one naming Config.WindowMax", msg)
		}
	}()
	newFakeThrottler(t, Config[*fakeCtx, fakeHandler]{WindowMin: 20, WindowMax: 10})
}

// TestThrottlerAcceptPathAllocatesNothing: admission and rejection allocate nothing of their own.
func TestThrottlerAcceptPathAllocatesNothing(t *testing.T) {
	_, h := newFakeThrottler(t, Config[*fakeCtx, fakeHandler]{WindowMin: 1, WindowMax: 1})
	c := &fakeCtx{}
	if allocs := testing.AllocsPerRun(1000, func() { _ = h(c) }); allocs != 0 {
		t.Fatalf("admitted: %v allocations per request, want 0", allocs)
	}
	rej := &fakeCtx{headers: map[string]string{}}
	full := &fakeCtx{next: func() error {
		if allocs := testing.AllocsPerRun(1000, func() { _ = h(rej) }); allocs != 0 {
			t.Errorf("rejected: %v allocations per request, want 0", allocs)
		}
		return nil
	}}
	_ = h(full)
	if rej.headers[HeaderRejectedBy] != "throttle/default" {
		t.Fatalf("rejected request's headers %v", rej.headers)
	}
}
