// Package core is the load shedder without a web framework: the load signals, the policy that turns a load into
// a shedding probability, the background sampler, the per-request decision and its counters, Status and the
// Prometheus metrics. The Fiber adapters (github.com/fiberguard/fiberguard/loadshed for Fiber v2,
// github.com/fiberguard/fiberguard/v3/loadshed for Fiber v3, and .../nethttp/loadshed for net/http) hold only
// the framework's glue; users import an adapter, and this package for the signals and the types of Status.
package core

import (
	"context"
	"log"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Engine owns a background sampler of the load and decides each request by it. Create it with NewEngine and
// stop it with Close.
type Engine struct {
	name   string
	dryRun bool
	// The header values of a rejection, built once: retryAfter is nil when no Retry-After is sent.
	retryAfter, rejectedBy []byte

	policy     Policy
	signal     Signal
	signalName string // for Status: the CPU signal's source and capacity, or "custom"
	smoothing  float64
	log        Logger
	wake       chan struct{} // a request that took a reading tells the sampler to take up its new wait

	state atomic.Pointer[snapshot]

	normal, crit decisions
	// finished counts the requests Admit let through whose handlers have returned (Done); gated those it
	// rejected for the in-flight limit. Each on a cache line of its own, away from the decisions.
	finished, gated counter

	samplerErrors atomic.Uint64
	sampleMu      sync.Mutex  // one reading at a time: the sampler's, Sample's and a request's (overdue)
	closed        bool        // set by Close; guarded by sampleMu
	lastErr       string      // guarded by sampleMu
	controller    *Controller // the signal, when it is a Controller: it sets the in-flight limit
	lastGated     uint64      // gated at the last reading; guarded by sampleMu
	lastDecided   [2]uint64   // admitted and rejected at the last reading; guarded by sampleMu
	lastFinished  uint64      // finished at the last reading; guarded by sampleMu
	lastObserved  time.Time   // of the last reading's observeDecisions; guarded by sampleMu
	pace          pace        // its rhythm fields are guarded by sampleMu; interval and idle never change

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	metrics   *metrics
}

// NewEngine validates cfg's settings (panicking on invalid values, naming the field), takes the first load
// reading, registers the metrics and starts the background sampler; the framework's fields (Next, Critical,
// OnReject) are the middleware's, not the Engine's. cfg is used as given: fill it with WithDefaults first. lg
// receives what the Engine says at start (what the load is read from) and the sampler's errors; nil means the
// standard library's log package.
func NewEngine[C, H any](cfg Config[C, H], lg Logger) *Engine {
	cfg.validateSettings()
	sig := cfg.Signal
	if sig == nil {
		sig = defaultSignal(cfg.CPUs, cfg.Target)
	}
	if lg == nil {
		lg = stdLogger{}
	}
	logSignal(lg, sig)
	policy := Policy{Lower: cfg.Lower, Upper: cfg.Upper, CriticalLower: cfg.CriticalLower, CriticalUpper: cfg.CriticalUpper}
	smoothing := cfg.Smoothing
	if bindController(sig, policy) {
		smoothing = 1 // a settled load moves gradually already; smoothing it would only slow it
	}
	e := &Engine{
		name:       cfg.Name,
		dryRun:     cfg.DryRun,
		retryAfter: retryAfterHeader(cfg.RetryAfter),
		rejectedBy: []byte("loadshed/" + cfg.Name),
		policy:     policy,
		signal:     sig,
		signalName: signalName(sig),
		smoothing:  smoothing,
		log:        lg,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	e.pace = newPace(cfg.Interval, cfg.IdleInterval, cfg.Lower)
	e.controller, _ = sig.(*Controller)
	e.publish(snapshot{})
	e.sample(true) // the first reading exists before the first request

	if !cfg.DisableMetrics {
		reg := cfg.Registerer
		if reg == nil {
			reg = prometheus.DefaultRegisterer
		}
		e.metrics = registerMetrics(reg, cfg.Name, e)
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, e.cancel = context.WithCancel(ctx)
	go e.run(ctx)
	return e
}

// counter is an atomic count on a cache line of its own.
type counter struct {
	atomic.Uint64
	_ [56]byte
}

// Admit decides one request and counts the decision under its priority: false means reject it. A request is
// rejected by the shedding probability (between probabilities 0 and 1 the rejections are spread evenly over each
// priority's requests, see decisions.spread), or, while the sampler has set an in-flight limit, when that many
// requests are in flight already (twice as many for a critical one). Every request Admit returns true for must
// be followed by Done when its handler returns. In dry-run mode a request that would be rejected is counted as
// rejected and Admit returns true. The ordinary request that finds the sampler late for its reading takes it
// (see pace).
func (e *Engine) Admit(critical bool) bool {
	st := e.state.Load()
	prob, d, limit, wakeAt, shedAt := st.normal, &e.normal, st.limit, st.wakeAt, st.shedAt
	if critical {
		prob, d, limit, wakeAt, shedAt = st.critical, &e.crit, 2*st.limit, 0, 0
	}
	if prob > 0 && (prob >= 1 || d.spread(prob, rand.Float64())) {
		if d.rejected.Add(1) == shedAt { // the sampler is late for its reading: take it
			e.overdue()
		}
		return e.dryRun
	}
	if limit > 0 && e.InFlight() >= limit {
		return e.gate(d, shedAt)
	}
	if d.admitted.Add(1) == wakeAt { // the sampler is late for its reading: take it
		e.overdue()
	}
	return true
}

// Done tells the Engine that a request Admit let through has finished: its handler returned. The in-flight count
// is the requests let through less those done.
func (e *Engine) Done() { e.finished.Add(1) }

// InFlight is the number of requests let through by Admit and not yet Done (in dry-run mode, with those that
// would have been rejected).
func (e *Engine) InFlight() int64 {
	n := e.normal.admitted.Load() + e.crit.admitted.Load()
	if e.dryRun {
		n += e.normal.rejected.Load() + e.crit.rejected.Load()
	}
	return max(int64(n-e.finished.Load()), 0) // a Done read after its Admit was counted can make it -1
}

// gate rejects a request for the in-flight limit. It is kept out of line, off the path of an admitted request.
//
//go:noinline
func (e *Engine) gate(d *decisions, shedAt uint64) bool {
	e.gated.Add(1)
	if d.rejected.Add(1) == shedAt {
		e.overdue()
	}
	return e.dryRun
}

// Close stops the sampler, waits for it to exit and unregisters the metrics. Admit keeps deciding with the last
// load. Close is idempotent, safe to call concurrently with requests, and returns nil.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.cancel()
		<-e.done // the sampler unregisters the metrics as it exits
		e.sampleMu.Lock()
		e.closed = true // no request takes a reading from here on
		e.sampleMu.Unlock()
	})
	return nil
}

// stdLogger logs through the standard library's log package.
type stdLogger struct{}

func (stdLogger) Infof(format string, v ...any) { log.Printf("[Info] "+format, v...) }
func (stdLogger) Warnf(format string, v ...any) { log.Printf("[Warn] "+format, v...) }
