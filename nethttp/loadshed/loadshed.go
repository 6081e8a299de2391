// Package loadshed rejects requests with a probability that grows with the load of the CPU the process may use
// (its container's limit, not the host's): none below Config.Lower, all above Config.Upper.
//
// New returns the middleware, a func(http.Handler) http.Handler; NewShedder returns the Shedder behind it, with
// Status for a status page and Close to stop its sampler. This is the net/http adapter
// (github.com/fiberguard/fiberguard/loadshed and github.com/fiberguard/fiberguard/v3/loadshed are the Fiber
// ones): the Config, the signals, the controller, the sampler and the metrics live in
// github.com/fiberguard/fiberguard/loadshed/core: import it for the names that go into a Config and the types of Status.
package loadshed

import (
	"io"
	"net/http"

	"github.com/fiberguard/fiberguard/loadshed/core"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *http.Request) bool: nil
//   - Lower float64: 0.90
//   - Upper float64: 0.95
//   - Critical func(c *http.Request) bool: nil (no request is critical)
//   - CriticalLower float64: 0.98
//   - CriticalUpper float64: 1.0
//   - DryRun bool: false
//   - Signal Signal: DefaultSignal(CPUs), a Controller over the utilisation of the CPU the process may use beside its
//     goroutines' scheduling latency and run queue: it sheds the share of requests that holds the CPU at 0.97 of what
//     the process may use, and while its goroutines queue for a CPU (waits over 7ms, or 2 runnable goroutines per P) it
//     limits the requests in flight
//   - CPUs float64: 0 (detected from the cgroup, else the host)
//   - Target float64: 0.97 (DefaultControlTarget)
//   - Interval time.Duration: 20ms
//   - IdleInterval time.Duration: 320ms, or Interval if longer
//   - Smoothing float64: 0.2 (about 100ms of memory at the default Interval)
//   - OnReject http.Handler: 503 with the text body "loadshed: overloaded, retry later" (the adapter's ConfigDefault)
//   - RetryAfter time.Duration: time.Second
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close)
type Config = core.Config[*http.Request, http.Handler]

// The default rejection's body and Content-Type. The header value is shared by every rejection: assigned, never
// modified in place, and with cap == len so that a Header.Add after it copies rather than writes into it.
const rejectBody = "loadshed: overloaded, retry later\n"

var textPlain = []string{"text/plain; charset=utf-8"}

// ConfigDefault is the default config. Its OnReject answers 503 with a short text body naming the module.
var ConfigDefault = core.Defaults[*http.Request, http.Handler](http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header()["Content-Type"] = textPlain
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, rejectBody)
}))

// Shedder owns a background sampler of the load and the middleware that rejects by it: Handler, Status and
// Close. Create it with NewShedder.
type Shedder struct {
	engine   *core.Engine
	next     func(*http.Request) bool
	critical func(*http.Request) bool
	onReject http.Handler
	// The header values of a rejection, built once and assigned to every rejected response's header, so a
	// rejection allocates none: retryAfter is nil when none is sent. Each has cap == len, so that a handler
	// appending to the header (Header.Add) copies it instead of writing into the shared array.
	retryAfter, rejectedBy []string
}

// New creates a load-shedding middleware: NewShedder(config...).Handler(). Its background sampler runs until
// Config.Context is done (for ever when Context is nil); use NewShedder for a handle that can be closed and
// queried.
func New(config ...Config) func(http.Handler) http.Handler {
	return NewShedder(config...).Handler()
}

// NewShedder fills the zero fields of the config from ConfigDefault, validates it (panicking on invalid values,
// naming the field), takes the first load reading and starts the background sampler. The Shedder logs through
// the standard library's log package.
func NewShedder(config ...Config) *Shedder {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0].WithDefaults(ConfigDefault)
	}
	cfg.Validate()
	e := core.NewEngine(cfg, nil)
	s := &Shedder{
		engine:     e,
		next:       cfg.Next,
		critical:   cfg.Critical,
		onReject:   cfg.OnReject,
		rejectedBy: []string{string(e.RejectedBy())},
	}
	if ra := e.RetryAfter(); ra != nil {
		s.retryAfter = []string{string(ra)}
	}
	return s
}

// Handler returns the middleware. The handlers it wraps share the Shedder's state: one sampler, one set of
// counters.
func (s *Shedder) Handler() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return &handler{s: s, next: next} }
}

// handler is the Shedder in front of one next handler; a struct rather than a closure keeps the request path to
// one indirect call.
type handler struct {
	s    *Shedder
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	if s.next != nil && s.next(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	if s.engine.Admit(s.critical != nil && s.critical(r)) {
		defer s.engine.Done() // also when next panics: net/http recovers it, and the request is no longer in flight
		h.next.ServeHTTP(w, r)
		return
	}
	s.reject(w, r)
}

// reject sets the rejection headers and calls OnReject. The keys are canonical already, so assigning to the map
// stands for Header.Set without its copy of the value.
func (s *Shedder) reject(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	if s.retryAfter != nil {
		hdr[core.HeaderRetryAfter] = s.retryAfter
	}
	hdr[core.HeaderRejectedBy] = s.rejectedBy
	s.onReject.ServeHTTP(w, r)
}

// Status returns the current load, probabilities and counters. Each call returns fresh values; it is safe to
// call concurrently with requests and the sampler.
func (s *Shedder) Status() core.Status { return s.engine.Status() }

// Close stops the sampler, waits for it to exit and unregisters the metrics. The middleware keeps answering
// with the last load. Close is idempotent, safe to call concurrently with requests, and returns nil.
func (s *Shedder) Close() error { return s.engine.Close() }
