package core

// Ctx is what the middleware needs of a framework's request context: calling the next handler and setting a
// response header. Fiber v2's *fiber.Ctx and Fiber v3's fiber.Ctx both are one.
type Ctx interface {
	Next() error
	Set(key, val string)
}

// Shedder is the load-shedding middleware over an Engine, for a framework whose request context is C and whose
// handler is H: a background sampler of the load and the handler that rejects by it. Create it with NewShedder
// (an adapter's NewShedder) and stop it with Close.
type Shedder[C Ctx, H ~func(C) error] struct {
	engine   *Engine
	next     func(C) bool
	critical func(C) bool
	onReject H
	// The header values of a rejection, built once: retryAfter is "" when none is sent.
	retryAfter, rejectedBy string
}

// NewShedder fills the zero fields of the first config from defaults (the adapter's ConfigDefault), validates it
// (panicking on invalid values, naming the field), takes the first load reading and starts the background
// sampler. lg receives the Engine's log lines (nil: the standard library's log package).
func NewShedder[C Ctx, H ~func(C) error](defaults Config[C, H], lg Logger, config ...Config[C, H]) *Shedder[C, H] {
	cfg := defaults
	if len(config) > 0 {
		cfg = config[0].WithDefaults(defaults)
	}
	cfg.Validate()
	e := NewEngine(cfg, lg)
	return &Shedder[C, H]{
		engine:     e,
		next:       cfg.Next,
		critical:   cfg.Critical,
		onReject:   cfg.OnReject,
		retryAfter: string(e.RetryAfter()),
		rejectedBy: string(e.RejectedBy()),
	}
}

// Handler returns the middleware. Every call returns the same handler over the Shedder's state.
func (s *Shedder[C, H]) Handler() H {
	return H(s.handle)
}

func (s *Shedder[C, H]) handle(c C) error {
	if s.next != nil && s.next(c) {
		return c.Next()
	}
	if s.engine.Admit(s.critical != nil && s.critical(c)) {
		defer s.engine.Done()
		return c.Next()
	}
	if s.retryAfter != "" {
		c.Set(HeaderRetryAfter, s.retryAfter)
	}
	c.Set(HeaderRejectedBy, s.rejectedBy)
	return s.onReject(c)
}

// Status returns the current load, probabilities and counters. Each call returns fresh values; it is safe to
// call concurrently with requests and the sampler.
func (s *Shedder[C, H]) Status() Status { return s.engine.Status() }

// Close stops the sampler, waits for it to exit and unregisters the metrics. The middleware keeps answering
// with the last load. Close is idempotent, safe to call concurrently with requests, and returns nil.
func (s *Shedder[C, H]) Close() error { return s.engine.Close() }
