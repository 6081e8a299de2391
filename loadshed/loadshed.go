// Package loadshed rejects requests with a probability that grows with the load of the CPU the process may use
// (its container's limit, not the host's): none below Config.Lower, all above Config.Upper.
//
// New returns the middleware; NewShedder returns the Shedder behind it, with Status for a status page and Close
// to stop its sampler.
package loadshed

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// New creates a load-shedding middleware: NewShedder(config...).Handler(). Its background sampler runs until
// Config.Context is done (for ever when Context is nil); use NewShedder for a handle that can be closed and
// queried.
func New(config ...Config) fiber.Handler {
	return NewShedder(config...).Handler()
}

// Shedder owns a background sampler of the load and the middleware that rejects by it. Create it with
// NewShedder and stop it with Close.
type Shedder struct {
	name     string
	next     func(*fiber.Ctx) bool
	critical func(*fiber.Ctx) bool
	onReject fiber.Handler
	dryRun   bool
	// The headers of a rejection, built once: retryAfter is nil when no Retry-After is sent.
	retryAfter, rejectedBy []byte

	policy     Policy
	signal     Signal
	signalName string // for Status: the CPU signal's source and capacity, or "custom"
	smoothing  float64
	interval   time.Duration

	state atomic.Pointer[snapshot]

	normal, crit  decisions
	samplerErrors atomic.Uint64
	lastErr       string // the sampler goroutine's own

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	metrics   *metrics
}

// decisions counts one priority's outcomes. Padding keeps the two priorities on separate cache lines.
type decisions struct {
	admitted atomic.Uint64
	rejected atomic.Uint64
	_        [48]byte
}

// NewShedder validates config (panicking on invalid values, naming the field), takes the first load reading and
// starts the background sampler.
func NewShedder(config ...Config) *Shedder {
	cfg := configDefault(config...)
	cfg.validate()
	sig := cfg.Signal
	if sig == nil {
		sig = DefaultSignal(cfg.CPUs)
	}
	logSignal(sig)
	s := &Shedder{
		name:       cfg.Name,
		next:       cfg.Next,
		critical:   cfg.Critical,
		onReject:   cfg.OnReject,
		dryRun:     cfg.DryRun,
		retryAfter: retryAfterHeader(cfg.RetryAfter),
		rejectedBy: []byte("loadshed/" + cfg.Name),
		policy:     Policy{Lower: cfg.Lower, Upper: cfg.Upper, CriticalLower: cfg.CriticalLower, CriticalUpper: cfg.CriticalUpper},
		signal:     sig,
		signalName: signalName(sig),
		smoothing:  cfg.Smoothing,
		interval:   cfg.Interval,
		done:       make(chan struct{}),
	}
	s.publish(0, time.Time{})
	s.sample(true) // the first reading exists before the first request

	if !cfg.DisableMetrics {
		reg := cfg.Registerer
		if reg == nil {
			reg = prometheus.DefaultRegisterer
		}
		s.metrics = registerMetrics(reg, cfg.Name, s)
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, s.cancel = context.WithCancel(ctx)
	go s.run(ctx)
	return s
}

// Handler returns the middleware. Every call returns the same handler over the Shedder's state.
func (s *Shedder) Handler() fiber.Handler {
	return s.handle
}

func (s *Shedder) handle(c *fiber.Ctx) error {
	if s.next != nil && s.next(c) {
		return c.Next()
	}
	st := s.state.Load()
	prob, d := st.normal, &s.normal
	if s.critical != nil && s.critical(c) {
		prob, d = st.critical, &s.crit
	}
	if prob > 0 && shed(prob, rand.Float64()) {
		d.rejected.Add(1)
		if !s.dryRun {
			return s.reject(c)
		}
		return c.Next()
	}
	d.admitted.Add(1)
	return c.Next()
}

// reject sets the headers of a rejection and calls OnReject.
func (s *Shedder) reject(c *fiber.Ctx) error {
	h := &c.Response().Header
	if s.retryAfter != nil {
		h.SetCanonical(retryAfterKey, s.retryAfter)
	}
	h.SetCanonical(rejectedByKey, s.rejectedBy)
	return s.onReject(c)
}

var (
	retryAfterKey = []byte(fiber.HeaderRetryAfter)
	rejectedByKey = []byte("Fiberguard-Rejected-By")
)

// retryAfterHeader is the Retry-After value of a rejection: whole seconds, rounded up, at least 1; nil (no
// header) when d is negative.
func retryAfterHeader(d time.Duration) []byte {
	if d < 0 {
		return nil
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 || secs == 0 {
		secs++
	}
	return strconv.AppendInt(nil, secs, 10)
}

// Close stops the sampler, waits for it to exit and unregisters the metrics. The middleware keeps answering
// with the last load. Close is idempotent, safe to call concurrently with requests, and returns nil.
func (s *Shedder) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		<-s.done
		if s.metrics != nil {
			s.metrics.unregister()
		}
	})
	return nil
}
