package throttle

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Throttler owns a concurrency window, the goroutines evaluating its triggers, and the middleware that admits
// requests into the window. Create it with NewThrottler and stop it with Close.
type Throttler struct {
	// Read by every request: the accept path reads the first two only.
	next       func(*fiber.Ctx) bool
	window     *Window
	onReject   fiber.Handler
	retryAfter []byte // the Retry-After value; nil sends none
	rejectedBy []byte // the Fiberguard-Rejected-By value, "throttle/<Name>"

	// The counters are written on every request: padding keeps them off the cache line of the fields above,
	// which every request reads, and off each other's.
	_        [64]byte
	admitted atomic.Uint64
	_        [56]byte
	rejected atomic.Uint64
	_        [56]byte

	name    string
	runners []*runner

	// mu orders the application of evaluations (see apply) and lets Status read the window's hold and every
	// trigger's record together.
	mu        sync.Mutex
	records   []triggerRecord // one per runner, same order
	updatedAt time.Time       // when the last evaluation of any trigger was applied; zero before the first
	// beforeHold, when set (by tests), is called by apply with mu held, between computing the hold and setting
	// it: the point where two triggers finishing together would interleave if apply were not serialised.
	beforeHold func(trigger string)

	transport *http.Transport // owned (nil when Config.RoundTripper is given): idle connections closed by Close
	cancel    context.CancelFunc
	unwatch   func() bool // stops watching Config.Context; nil without one
	wg        sync.WaitGroup
	closeOnce sync.Once
	metrics   *metrics
}

// NewThrottler validates config (panicking on invalid values, naming the field), registers the metrics, starts
// one goroutine per trigger (each evaluates its trigger at once, then every Interval) and returns the Throttler
// without waiting for any evaluation. The goroutines stop when Close is called or Config.Context is done.
func NewThrottler(config ...Config) *Throttler {
	cfg := configDefault(config...)
	cfg.validate()
	t := &Throttler{
		next:       cfg.Next,
		window:     NewWindow(cfg.WindowMin, cfg.WindowMax),
		onReject:   cfg.OnReject,
		retryAfter: retryAfterValue(cfg.RetryAfter),
		rejectedBy: []byte("throttle/" + cfg.Name),
		name:       cfg.Name,
	}

	triggers := triggersOf(cfg)
	prom, promErr := t.prometheus(cfg)
	t.records = make([]triggerRecord, len(triggers))
	for i, s := range triggers {
		t.records[i] = triggerRecord{name: s.Name, kind: s.kind()}
		eval := evaluatorOf(s, prom)
		if s.Func == nil && promErr != nil {
			eval = failing(promErr)
		}
		t.runners = append(t.runners, &runner{
			trigger: s,
			eval:    eval,
			tracker: Tracker{Staleness: staleness(cfg, s), FailMode: cfg.FailMode},
			report:  func(now time.Time, state TriggerState, err error) { t.apply(i, now, state, err) },
		})
	}

	if !cfg.DisableMetrics {
		t.metrics = registerMetrics(cfg.Registerer, cfg.Name, triggers, t.view)
		if t.metrics != nil {
			for _, r := range t.runners {
				r.duration = t.metrics.durations.WithLabelValues(r.trigger.Name)
			}
		}
	}

	parent := cfg.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent) // keeps the values of Config.Context for the funcs
	t.cancel = cancel
	for _, r := range t.runners {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			r.run(ctx)
		}()
	}
	if cfg.Context != nil {
		// The rest of Close: wait for the goroutines, unregister the metrics, close idle connections.
		t.unwatch = context.AfterFunc(cfg.Context, t.shutdown)
	}
	return t
}

// prometheus returns the API client of the PromQL triggers, nil without Config.PrometheusURL.
func (t *Throttler) prometheus(cfg Config) (promv1.API, error) {
	if cfg.PrometheusURL == "" {
		return nil, nil
	}
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
	if err != nil {
		return nil, err
	}
	return promv1.NewAPI(client), nil
}

// Close stops the trigger goroutines (cancelling evaluations in progress), waits for them to exit, closes idle
// connections to Prometheus and unregisters the metrics. The middleware keeps admitting requests into the last
// window, which no longer backs off. Close is idempotent, safe to call concurrently with requests, and returns
// nil.
func (t *Throttler) Close() error {
	if t.unwatch != nil {
		t.unwatch()
	}
	t.shutdown()
	return nil
}

// shutdown is Close once Config.Context no longer needs watching; every caller returns once it is done.
func (t *Throttler) shutdown() {
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
}

// apply records evaluation i and steers the window by it: growth is held while any trigger fires, and a firing
// evaluation halves the window once. Evaluations are applied one at a time: the hold is computed from every
// trigger's state and written before another trigger can change its own, so the last hold written always agrees
// with the states. Unordered, two triggers finishing together could write their holds in the opposite order of
// their reads, and the window would grow while one of them fires until its next evaluation.
func (t *Throttler) apply(i int, now time.Time, state TriggerState, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.records[i].record(now, state, err)
	t.updatedAt = now
	hold := false
	for j := range t.records {
		hold = hold || t.records[j].state.Firing
	}
	if t.beforeHold != nil {
		t.beforeHold(t.records[i].name)
	}
	t.window.SetHold(hold)
	if state.Firing {
		t.window.Backoff()
	}
}
