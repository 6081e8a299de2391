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

	runners []*runner

	// mu orders the application of evaluations (see apply) and lets Status read the window's hold and every
	// trigger's record together.
	mu      sync.Mutex
	records []triggerRecord // one per runner, same order
	// beforeHold, when set (by tests), is called by apply with mu held, between computing the hold and setting
	// it: the point where two triggers finishing together would interleave if apply were not serialised.
	beforeHold func(trigger string)

	transport *http.Transport // owned (nil when Config.RoundTripper is given): idle connections closed by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	metrics   *metrics
}

// NewThrottler validates config (panicking on invalid values, naming the field), starts one goroutine per
// trigger (each evaluates its trigger at once, then every Interval) and returns the Throttler. The goroutines
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

	triggers := triggersOf(cfg)
	prom := t.prometheus(cfg)
	t.records = make([]triggerRecord, len(triggers))
	for i, s := range triggers {
		t.records[i] = triggerRecord{name: s.Name, kind: s.kind()}
		t.runners = append(t.runners, &runner{
			trigger: s,
			eval:    evaluatorOf(s, prom),
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

	ctx, cancel := context.WithCancel(cfg.Context)
	t.cancel = cancel
	for _, r := range t.runners {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			r.run(ctx)
		}()
	}
	return t
}

// prometheus returns the API client of the PromQL triggers, nil without Config.PrometheusURL.
func (t *Throttler) prometheus(cfg Config) promv1.API {
	if cfg.PrometheusURL == "" {
		return nil
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
	if err != nil { // validate has checked the URL, so this is unexpected; name the field anyway
		panic("throttle: Config.PrometheusURL: " + err.Error())
	}
	return promv1.NewAPI(client)
}

// Close stops the trigger goroutines, waits for them to exit, closes idle connections to Prometheus and
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

// apply records evaluation i and steers the window by it: growth is held while any trigger fires, and a firing
// evaluation halves the window once. Evaluations are applied one at a time: the hold is computed from every
// trigger's state and written before another trigger can change its own, so the last hold written always agrees
// with the states. Unordered, two triggers finishing together could write their holds in the opposite order of
// their reads, and the window would grow while one of them fires until its next evaluation.
func (t *Throttler) apply(i int, now time.Time, state TriggerState, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.records[i].record(now, state, err)
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
