// Package loadshed rejects requests with a probability that grows with the load of the CPU the process may use
// (its container's limit, not the host's): none below Config.Lower, all above Config.Upper.
package loadshed

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/log"
)

// New creates a load-shedding middleware. Its background sampler runs until Config.Context is done; use
// NewShedder for a handle that can be closed and queried.
func New(config ...Config) fiber.Handler {
	return NewShedder(config...).Handler()
}

// Shedder owns a background sampler of the load and the middleware that sheds by it. Create it with NewShedder
// and stop it with Close.
type Shedder struct {
	next     func(*fiber.Ctx) bool
	critical func(*fiber.Ctx) bool
	onShed   fiber.Handler
	dryRun   bool

	policy     Policy
	signal     Signal
	signalName string // for Stats: the CPU signal's source and capacity, or "custom"
	smoothing  float64

	state atomic.Pointer[snapshot]

	normal, crit  decisions
	samplerErrors atomic.Uint64
	lastErr       string // the sampler goroutine's own

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	metrics   *metrics
}

// snapshot is what the sampler publishes for the request path: one pointer load per request.
type snapshot struct {
	load, normal, critical float64
}

// decisions counts one priority's outcomes. Padding keeps the two priorities on separate cache lines.
type decisions struct {
	admitted atomic.Uint64
	shed     atomic.Uint64
	_        [48]byte
}

// Stats is a point-in-time view of a Shedder, for status pages.
type Stats struct {
	Load                float64 `json:"load"`
	Probability         float64 `json:"probability"`
	CriticalProbability float64 `json:"critical_probability"`
	Admitted            uint64  `json:"admitted"`
	Shed                uint64  `json:"shed"`
	CriticalAdmitted    uint64  `json:"critical_admitted"`
	CriticalShed        uint64  `json:"critical_shed"`
	SamplerErrors       uint64  `json:"sampler_errors"`
	DryRun              bool    `json:"dry_run"`
	Signal              string  `json:"signal"`
	// Readings holds each signal's last load when Signal combines several (the default does), and what each
	// reads and why.
	Readings []Reading `json:"readings,omitempty"`
}

// NewShedder validates config (panicking on invalid values, naming the field), takes the first load reading and
// starts the background sampler.
func NewShedder(config ...Config) *Shedder {
	cfg := configDefault(config...)
	sig := cfg.Signal
	if sig == nil {
		sig = DefaultSignal(cfg.CPUs)
	}
	logSignal(sig)
	s := &Shedder{
		next:       cfg.Next,
		critical:   cfg.Critical,
		onShed:     cfg.OnShed,
		dryRun:     cfg.DryRun,
		policy:     Policy{Lower: cfg.Lower, Upper: cfg.Upper, CriticalLower: cfg.CriticalLower, CriticalUpper: cfg.CriticalUpper},
		signal:     sig,
		signalName: signalName(sig),
		smoothing:  cfg.Smoothing,
		done:       make(chan struct{}),
	}
	if s.onShed == nil {
		s.onShed = unavailable(cfg.RetryAfter)
	}
	s.publish(0)
	s.sample(true) // the first reading exists before the first request

	if !cfg.DisableMetrics {
		s.metrics = registerMetrics(cfg.Registerer, cfg.Name, s)
	}
	ctx, cancel := context.WithCancel(cfg.Context)
	s.cancel = cancel
	go s.run(ctx, cfg.Interval)
	return s
}

// Handler returns the middleware.
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
		d.shed.Add(1)
		if !s.dryRun {
			return s.onShed(c)
		}
		return c.Next()
	}
	d.admitted.Add(1)
	return c.Next()
}

// Stats returns the current load, probabilities and counters.
func (s *Shedder) Stats() Stats {
	st := s.state.Load()
	return Stats{
		Load:                st.load,
		Probability:         st.normal,
		CriticalProbability: st.critical,
		Admitted:            s.normal.admitted.Load(),
		Shed:                s.normal.shed.Load(),
		CriticalAdmitted:    s.crit.admitted.Load(),
		CriticalShed:        s.crit.shed.Load(),
		SamplerErrors:       s.samplerErrors.Load(),
		DryRun:              s.dryRun,
		Signal:              s.signalName,
		Readings:            s.readings(),
	}
}

func (s *Shedder) readings() []Reading {
	if c, ok := s.signal.(*Combined); ok {
		return c.Readings()
	}
	if r := signalReason(s.signal); r != "" {
		return []Reading{{Signal: s.signalName, Load: s.state.Load().load, Reason: r}}
	}
	return nil
}

// Close stops the sampler, waits for it to exit and unregisters the metrics. The middleware keeps working with
// the last load. Close is idempotent.
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

func (s *Shedder) run(ctx context.Context, interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sample(false)
		}
	}
}

// errBadReading reports a reading that is not a finite, non-negative number.
var errBadReading = errors.New("loadshed: signal returned a reading that is not a finite number >= 0")

func validLoad(load float64) bool { return !math.IsNaN(load) && !math.IsInf(load, 0) && load >= 0 }

// logSignal says at start what the load is read from and why: each signal that gives a reason logs it (the CPU
// signal's source: a cpuacct group apart from the cpu group, no limit, a cpuset; the pressure file).
func logSignal(sig Signal) {
	if signalName(sig) == "custom" {
		return
	}
	log.Infof("loadshed: load is %s", signalName(sig))
	sigs := []Signal{sig}
	if c, ok := sig.(*Combined); ok {
		sigs = c.Signals()
	}
	for _, s := range sigs {
		if r := signalReason(s); r != "" {
			log.Infof("loadshed: %s: %s", signalName(s), r)
		}
	}
}

// sample reads the signal once and publishes the smoothed load. Only NewShedder and the sampler goroutine call it.
func (s *Shedder) sample(first bool) {
	load, err := s.signal.Load()
	if err == nil && !validLoad(load) {
		err = errBadReading
	}
	if err != nil {
		s.samplerErrors.Add(1)
		if msg := err.Error(); msg != s.lastErr { // log each new error once, not every interval
			log.Warnf("loadshed: signal error, keeping the last load: %v", err)
			s.lastErr = msg
		}
		return
	}
	s.lastErr = ""
	s.publish(smooth(s.state.Load().load, load, s.smoothing, first))
}

func (s *Shedder) publish(load float64) {
	normal, critical := s.policy.Probabilities(load)
	s.state.Store(&snapshot{load: load, normal: normal, critical: critical})
}

// unavailable is the default OnShed: 503 with Retry-After, written without allocating.
func unavailable(retryAfter time.Duration) fiber.Handler {
	var header []byte
	if retryAfter >= 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		header = strconv.AppendInt(nil, secs, 10)
	}
	body := []byte("Service Unavailable")
	return func(c *fiber.Ctx) error {
		resp := c.Response()
		resp.SetStatusCode(fiber.StatusServiceUnavailable)
		if header != nil {
			resp.Header.SetCanonical(retryAfterKey, header)
		}
		resp.SetBodyRaw(body)
		return nil
	}
}

var retryAfterKey = []byte(fiber.HeaderRetryAfter)
