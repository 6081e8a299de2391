// Package throttle limits the number of concurrent requests to an AIMD congestion window steered by backpressure
// signals: PromQL queries against a Prometheus server, or Go functions evaluated in process. While no signal
// fires the window grows by one per window's worth of completed requests; each evaluation of a firing signal
// halves it. Requests beyond the window are rejected (503 with Retry-After by default).
package throttle

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// New creates a throttling middleware. Its signal goroutines run until Config.Context is done; use NewThrottler
// for a handle that can be closed and inspected.
func New(config ...Config) fiber.Handler {
	return NewThrottler(config...).Handler()
}

// Throttler owns a concurrency window, the goroutines evaluating its signals, and the middleware that admits
// requests into the window. Create it with NewThrottler and stop it with Close.
type Throttler struct {
	next         func(*fiber.Ctx) bool
	limitReached fiber.Handler
	window       *Window

	// The counters are written on every request: padding keeps them off the cache line of the fields above,
	// which every request reads, and off each other's.
	_        [64]byte
	admitted atomic.Uint64
	_        [56]byte
	rejected atomic.Uint64
	_        [56]byte

	signals []*signalRunner

	// mu orders the application of evaluations (see apply) and lets Snapshot read the window's hold and every
	// signal's state together.
	mu sync.Mutex
	// beforeHold, when set (by tests), is called by apply with mu held, between computing the hold and setting
	// it: the point where two signals finishing together would interleave if apply were not serialised.
	beforeHold func(signal string)

	transport *http.Transport // owned (nil when Config.RoundTripper is given): idle connections closed by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	metrics   *metrics
}

// Snapshot is a point-in-time view of a Throttler, for status pages.
type Snapshot struct {
	Window    int `json:"window"`
	InFlight  int `json:"in_flight"`
	WindowMin int `json:"window_min"`
	WindowMax int `json:"window_max"`
	// GrowthHeld: a signal fires, so completions do not grow the window.
	GrowthHeld bool           `json:"growth_held"`
	Admitted   uint64         `json:"admitted"`
	Rejected   uint64         `json:"rejected"`
	Signals    []SignalStatus `json:"signals"`
}

// SignalStatus is a signal's state in a Snapshot.
type SignalStatus struct {
	Name string `json:"name"`
	// Kind is "promql" or "func".
	Kind string `json:"kind"`
	// Firing is the state the window acts on.
	Firing bool `json:"firing"`
	// Verdict is what the last evaluation found: "no_data", "false", "firing", "error" (a failure that may pass)
	// or "invalid" (the query can never succeed as written); empty before the first evaluation.
	Verdict string `json:"verdict"`
	// Held: the last evaluation failed and the previous value is kept. Stale: the fail mode decides.
	Held  bool `json:"held"`
	Stale bool `json:"stale"`
	// Invalid: Prometheus rejected the query (a PromQL syntax or type error) or its result can never be a
	// signal. The signal does not fire, in either fail mode, until an evaluation succeeds.
	Invalid bool `json:"invalid"`
	// Evaluations counts evaluations (a signal not evaluated yet has 0); Errors counts failed ones, invalid
	// included.
	Evaluations uint64 `json:"evaluations"`
	Errors      uint64 `json:"errors"`
	Backoffs    uint64 `json:"backoffs"`
	LastError   string `json:"last_error,omitempty"`
	// LastSuccess is when an evaluation last succeeded; nil (JSON null) before the first success.
	LastSuccess *time.Time `json:"last_success"`
}

// NewThrottler validates config (panicking on invalid values, naming the field), starts one goroutine per
// signal (each evaluates its signal at once, then every Interval) and returns the Throttler. The goroutines
// stop when Close is called or Config.Context is done.
func NewThrottler(config ...Config) *Throttler {
	cfg := configDefault(config...)
	t := &Throttler{
		next:         cfg.Next,
		limitReached: cfg.LimitReached,
		window:       NewWindow(cfg.WindowMin, cfg.WindowMax),
	}
	if t.limitReached == nil {
		t.limitReached = rejectWith(cfg.StatusCode, cfg.RetryAfter)
	}

	var prom promv1.API
	if cfg.PrometheusURL != "" {
		rt := cfg.RoundTripper
		if rt == nil {
			if def, ok := api.DefaultRoundTripper.(*http.Transport); ok {
				t.transport = def.Clone()
			} else {
				t.transport = http.DefaultTransport.(*http.Transport).Clone()
			}
			rt = t.transport
		}
		client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, RoundTripper: rt})
		if err != nil { // validate has checked the URL, so this is unexpected; name the field anyway
			panic("throttle: Config.PrometheusURL: " + err.Error())
		}
		prom = promv1.NewAPI(client)
	}
	for _, s := range signalsOf(cfg) {
		r := &signalRunner{
			sig:     s,
			tracker: Tracker{Staleness: staleness(cfg, s), FailMode: cfg.FailMode},
			owner:   t,
		}
		if s.Func != nil {
			r.eval = funcEvaluator(s.Func)
		} else {
			r.eval = queryEvaluator(prom, s.Query)
		}
		t.signals = append(t.signals, r)
	}

	if !cfg.DisableMetrics {
		t.metrics = registerMetrics(cfg.Registerer, cfg.Name, t)
	}

	ctx, cancel := context.WithCancel(cfg.Context)
	t.cancel = cancel
	for _, r := range t.signals {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			r.run(ctx)
		}()
	}
	return t
}

// Handler returns the middleware.
func (t *Throttler) Handler() fiber.Handler {
	return t.handle
}

func (t *Throttler) handle(c *fiber.Ctx) error {
	if t.next != nil && t.next(c) {
		return c.Next()
	}
	if !t.window.TryAcquire() {
		t.rejected.Add(1)
		return t.limitReached(c)
	}
	// Deferred so that the slot comes back when a later handler panics, as well as on success and error.
	defer t.window.Release()
	t.admitted.Add(1)
	return c.Next()
}

// Window returns the current window size.
func (t *Throttler) Window() int { return t.window.Size() }

// Snapshot returns the window, counters and every signal's state. GrowthHeld and the signals' states are read
// together: GrowthHeld is true exactly when a signal in Signals is firing.
func (t *Throttler) Snapshot() Snapshot {
	s := Snapshot{
		Window:    t.window.Size(),
		InFlight:  t.window.InFlight(),
		WindowMin: t.window.Min(),
		WindowMax: t.window.Max(),
		Admitted:  t.admitted.Load(),
		Rejected:  t.rejected.Load(),
		Signals:   make([]SignalStatus, len(t.signals)),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s.GrowthHeld = t.window.Held()
	for i, r := range t.signals {
		s.Signals[i] = r.status()
	}
	return s
}

// Close stops the signal goroutines, waits for them to exit, closes idle connections to Prometheus and
// unregisters the metrics. The middleware keeps
// admitting requests into the last window, which no longer backs off. Close is idempotent and returns nil.
func (t *Throttler) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		t.wg.Wait()
		if t.transport != nil {
			t.transport.CloseIdleConnections()
		}
		if t.metrics != nil {
			t.metrics.unregister()
		}
	})
	return nil
}

// apply records an evaluation of r and steers the window by it: growth is held while any signal fires, and a
// firing evaluation halves the window once. Evaluations are applied one at a time: the hold is computed from
// every signal's state and written before another signal can change its own, so the last hold written always
// agrees with the states. Unordered, two signals finishing together could write their holds in the opposite
// order of their reads, and the window would grow while one of them fires until its next evaluation.
func (t *Throttler) apply(r *signalRunner, now time.Time, state State, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.record(now, state, err)
	hold := false
	for _, s := range t.signals {
		hold = hold || s.state.Firing
	}
	if t.beforeHold != nil {
		t.beforeHold(r.sig.Name)
	}
	t.window.SetHold(hold)
	if state.Firing {
		t.window.Backoff()
	}
}

// rejectWith returns the default LimitReached handler. The header value is formatted once, here, so the
// request path does not allocate.
func rejectWith(status int, retryAfter time.Duration) fiber.Handler {
	var value []byte
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		value = strconv.AppendInt(nil, secs, 10)
	}
	key := []byte(fiber.HeaderRetryAfter) // already canonical: no normalization per request
	return func(c *fiber.Ctx) error {
		c.Status(status)
		if value != nil {
			c.Response().Header.SetCanonical(key, value)
		}
		return nil
	}
}
