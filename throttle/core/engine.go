// Package core is the throttle without a web framework: the AIMD concurrency Window, the triggers (PromQL queries
// and in-process funcs) with their verdicts, trackers and the goroutines evaluating them, the PromQL client, the
// per-request admission and its counters, Status, the Prometheus metrics, the rejection header values, the
// configuration (its defaults and validation) and the middleware itself, generic over the framework's request
// context and handler (Config, Throttler). It imports no web framework: the Fiber adapters
// (github.com/fiberguard/fiberguard/throttle for Fiber v2, github.com/fiberguard/fiberguard/v3/throttle for Fiber
// v3, and .../nethttp/throttle for net/http) instantiate them with their framework's types; users import an
// adapter, and this package for Trigger and the other names that go into a Config.
package core

import (
	"context"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Engine owns a concurrency window, the goroutines evaluating its triggers, and the admission of requests into
// the window. Create it with NewEngine and stop it with Close.
type Engine struct {
	// Read by every request.
	window  *Window
	release func() // window.Release, bound once so that handing it out allocates nothing

	// The counters are written on every request: padding keeps them off the cache line of the fields above,
	// which every request reads, and off each other's.
	_        [64]byte
	admitted atomic.Uint64
	_        [56]byte
	rejected atomic.Uint64
	_        [56]byte

	name string
	// The header values of a rejection, built once: retryAfter is nil when no Retry-After is sent.
	retryAfter, rejectedBy []byte
	runners                []*runner

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

// NewEngine validates cfg's fields without a framework type (panicking on invalid values, naming the field),
// registers the metrics, starts one goroutine per trigger (each evaluates its trigger at once, then every Interval)
// and returns the Engine without waiting for any evaluation. The goroutines stop when Close is called or
// Config.Context is done. cfg is used as given: fill it with WithDefaults first. lg receives what the trigger
// goroutines report (a new error, a recovery, an invalid query) and the metrics' registration failures; nil means
// the standard library's log package.
func NewEngine[C, H any](cfg Config[C, H], lg Logger) *Engine {
	cfg.validateEngine()
	if lg == nil {
		lg = stdLogger{}
	}
	e := &Engine{
		window:     NewWindow(cfg.WindowMin, cfg.WindowMax),
		retryAfter: retryAfterHeader(cfg.RetryAfter),
		rejectedBy: []byte("throttle/" + cfg.Name),
		name:       cfg.Name,
	}
	e.release = e.window.Release

	triggers := triggersOf(cfg)
	if len(triggers) == 0 {
		// Not a panic: a fixed concurrency limit is a use, but most often a trigger was forgotten.
		lg.Warnf("throttle: %q has no trigger (Config.Triggers and Config.Queries are empty): nothing can make it "+
			"back off, so its window grows to Config.WindowMax (%d) and stays there, a fixed concurrency limit",
			cfg.Name, cfg.WindowMax)
	}
	prom, promErr := e.prometheus(cfg.PrometheusURL, cfg.RoundTripper)
	e.records = make([]triggerRecord, len(triggers))
	for i, s := range triggers {
		e.records[i] = triggerRecord{name: s.Name, kind: s.kind()}
		eval := evaluatorOf(s, prom)
		if s.Func == nil && promErr != nil {
			eval = failing(promErr)
		}
		e.runners = append(e.runners, &runner{
			trigger: s,
			eval:    eval,
			tracker: Tracker{Staleness: staleness(cfg, s), FailMode: cfg.FailMode},
			log:     lg,
			report:  func(now time.Time, state TriggerState, err error) { e.apply(i, now, state, err) },
		})
	}

	if !cfg.DisableMetrics {
		e.metrics = registerMetrics(cfg.Registerer, cfg.Name, triggers, e.view, lg.Warnf)
		if e.metrics != nil {
			for _, r := range e.runners {
				r.duration = e.metrics.durations.WithLabelValues(r.trigger.Name)
			}
		}
	}

	parent := cfg.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent) // keeps the values of Config.Context for the funcs
	e.cancel = cancel
	for _, r := range e.runners {
		e.wg.Go(func() { r.run(ctx) })
	}
	if cfg.Context != nil {
		// The rest of Close: wait for the goroutines, unregister the metrics, close idle connections.
		e.unwatch = context.AfterFunc(cfg.Context, e.shutdown)
	}
	return e
}

// TryAcquire admits one request into the window when fewer requests than the window are in flight, and counts
// the decision either way. When ok, release gives the slot back: call it exactly once, when the request has
// completed (defer it, so that a panicking handler returns the slot too). TryAcquire takes no lock and allocates
// nothing: release is the same func on every call.
func (e *Engine) TryAcquire() (release func(), ok bool) {
	if !e.window.TryAcquire() {
		e.rejected.Add(1)
		return nil, false
	}
	e.admitted.Add(1)
	return e.release, true
}

// prometheus returns the API client of the PromQL triggers at address (Config.PrometheusURL) through rt
// (Config.RoundTripper), nil without an address.
func (e *Engine) prometheus(address string, rt http.RoundTripper) (promv1.API, error) {
	if address == "" {
		return nil, nil
	}
	if rt == nil {
		if def, ok := api.DefaultRoundTripper.(*http.Transport); ok {
			e.transport = def.Clone()
		} else {
			e.transport = http.DefaultTransport.(*http.Transport).Clone()
		}
		rt = e.transport
	}
	client, err := api.NewClient(api.Config{Address: address, RoundTripper: rt})
	if err != nil {
		return nil, err
	}
	return promv1.NewAPI(client), nil
}

// Close stops the trigger goroutines (cancelling evaluations in progress), waits for them to exit, closes idle
// connections to Prometheus and unregisters the metrics. TryAcquire keeps admitting requests into the last
// window, which no longer backs off. Close is idempotent, safe to call concurrently with requests, and returns
// nil.
func (e *Engine) Close() error {
	if e.unwatch != nil {
		e.unwatch()
	}
	e.shutdown()
	return nil
}

// shutdown is Close once Config.Context no longer needs watching; every caller returns once it is done.
func (e *Engine) shutdown() {
	e.closeOnce.Do(func() {
		e.cancel()
		e.wg.Wait()
		if e.transport != nil {
			e.transport.CloseIdleConnections()
		}
		if e.metrics != nil {
			e.metrics.unregister()
		}
	})
}

// apply records evaluation i and steers the window by it: growth is held while any trigger fires, and a firing
// evaluation halves the window once. Evaluations are applied one at a time: the hold is computed from every
// trigger's state and written before another trigger can change its own, so the last hold written always agrees
// with the states. Unordered, two triggers finishing together could write their holds in the opposite order of
// their reads, and the window would grow while one of them fires until its next evaluation.
func (e *Engine) apply(i int, now time.Time, state TriggerState, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[i].record(now, state, err)
	e.updatedAt = now
	hold := false
	for j := range e.records {
		hold = hold || e.records[j].state.Firing
	}
	if e.beforeHold != nil {
		e.beforeHold(e.records[i].name)
	}
	e.window.SetHold(hold)
	if state.Firing {
		e.window.Backoff()
	}
}

// stdLogger logs through the standard library's log package.
type stdLogger struct{}

func (stdLogger) Infof(format string, v ...any)  { log.Printf("[Info] "+format, v...) }
func (stdLogger) Warnf(format string, v ...any)  { log.Printf("[Warn] "+format, v...) }
func (stdLogger) Errorf(format string, v ...any) { log.Printf("[Error] "+format, v...) }
