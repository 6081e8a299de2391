// Package throttle limits the number of concurrent requests to an AIMD congestion window steered by triggers. A
// trigger is a backpressure signal: a PromQL query (against a Prometheus server) or a func (evaluated in process)
// that fires or not. While no trigger fires the window grows by one per window's worth of completed requests;
// each evaluation of a firing trigger halves it. Requests beyond the window are rejected (503 with Retry-After
// by default).
//
// New returns the middleware, a func(http.Handler) http.Handler; NewThrottler returns the Throttler behind it,
// with Status for a status page and Close to stop its goroutines. This is the net/http adapter
// (github.com/fiberguard/fiberguard/throttle and github.com/fiberguard/fiberguard/v3/throttle are the Fiber ones):
// the configuration, the window, the triggers and their goroutines, the metrics and Status live in
// github.com/fiberguard/fiberguard/throttle/core: import it for the names that go into a Config and the types of Status.
package throttle

import (
	"io"
	"net/http"

	"github.com/fiberguard/fiberguard/throttle/core"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *http.Request) bool: nil
//   - PrometheusURL string: ""
//   - Queries []string: nil
//   - Triggers []Trigger: nil
//   - Interval time.Duration: 15s
//   - Timeout time.Duration: 5s, or the trigger's Interval if shorter
//   - Staleness time.Duration: 4 × the trigger's Interval (1 minute at the default Interval)
//   - FailMode FailMode: FailOpen
//   - WindowMin int: 10 (or WindowMax if smaller)
//   - WindowMax int: 1000 (or WindowMin if larger)
//   - OnReject http.Handler: 503 with a short text body naming the module (see the adapter's ConfigDefault)
//   - RetryAfter time.Duration: time.Second
//   - RoundTripper http.RoundTripper: nil (the Prometheus client's default transport)
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close)
type Config = core.Config[*http.Request, http.Handler]

// The default rejection's body and Content-Type. The header value is shared by every rejection: assigned, never
// modified in place, and with cap == len so that a Header.Add after it copies rather than writes into it.
const rejectBody = "throttle: concurrency limit reached, retry later\n"

var textPlain = []string{"text/plain; charset=utf-8"}

// ConfigDefault is the default config. Its OnReject answers 503 with a short text body naming the module.
var ConfigDefault = core.Defaults[*http.Request, http.Handler](http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header()["Content-Type"] = textPlain
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, rejectBody)
}))

// Throttler owns a concurrency window, the goroutines evaluating its triggers, and the middleware that admits
// requests into the window: Handler, Status and Close. Create it with NewThrottler and stop it with Close.
type Throttler struct {
	next     func(*http.Request) bool
	engine   *core.Engine
	onReject http.Handler
	// The header values of a rejection, built once and assigned to every rejected response's header, so a
	// rejection allocates none: retryAfter is nil when none is sent. Each has cap == len, so that a handler
	// appending to the header (Header.Add) copies it instead of writing into the shared array.
	retryAfter, rejectedBy []string
}

// New creates a throttling middleware: NewThrottler(config...).Handler(). Its trigger goroutines run until
// Config.Context is done (for the life of the process without one); use NewThrottler for a handle that can be
// closed and inspected.
func New(config ...Config) func(http.Handler) http.Handler {
	return NewThrottler(config...).Handler()
}

// NewThrottler fills the zero fields of the config from ConfigDefault, validates it (panicking on invalid values,
// naming the field), registers the metrics, starts one goroutine per trigger (each evaluates its trigger at once,
// then every Interval) and returns the Throttler without waiting for any evaluation. The goroutines stop when Close
// is called or Config.Context is done. The Throttler logs through the standard library's log package.
func NewThrottler(config ...Config) *Throttler {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
	}
	// ConfigDefault itself still goes through WithDefaults: it sets the triggers' default timeout.
	cfg = cfg.WithDefaults(ConfigDefault)
	cfg.Validate()
	e := core.NewEngine(cfg, nil)
	t := &Throttler{
		next:       cfg.Next,
		engine:     e,
		onReject:   cfg.OnReject,
		rejectedBy: []string{string(e.RejectedBy())},
	}
	if ra := e.RetryAfter(); ra != nil {
		t.retryAfter = []string{string(ra)}
	}
	return t
}

// Handler returns the middleware. The handlers it wraps share the Throttler's window: one limit on the requests
// in flight through all of them.
func (t *Throttler) Handler() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return &handler{t: t, next: next} }
}

// handler is the Throttler in front of one next handler; a struct rather than a closure keeps the request path
// to one indirect call.
type handler struct {
	t    *Throttler
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := h.t
	if t.next != nil && t.next(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	release, ok := t.engine.TryAcquire()
	if !ok {
		t.reject(w, r)
		return
	}
	// Deferred so that the slot comes back when next panics (net/http recovers it) as well as when it returns.
	defer release()
	h.next.ServeHTTP(w, r)
}

// reject sets the rejection headers and calls OnReject. The keys are canonical already, so assigning to the map
// stands for Header.Set without its copy of the value.
func (t *Throttler) reject(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	if t.retryAfter != nil {
		hdr[core.HeaderRetryAfter] = t.retryAfter
	}
	hdr[core.HeaderRejectedBy] = t.rejectedBy
	t.onReject.ServeHTTP(w, r)
}

// Status returns the window, counters and every trigger's state. Each call returns fresh values; it is safe to
// call concurrently with requests and evaluations.
func (t *Throttler) Status() core.Status { return t.engine.Status() }

// Close stops the trigger goroutines (cancelling evaluations in progress), waits for them to exit, closes idle
// connections to Prometheus and unregisters the metrics. The middleware keeps admitting requests into the last
// window, which no longer backs off. Close is idempotent, safe to call concurrently with requests, and returns
// nil.
func (t *Throttler) Close() error { return t.engine.Close() }
