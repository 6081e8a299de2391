package core

// Ctx is what the middleware needs of a framework's request context: Fiber v2's *fiber.Ctx and Fiber v3's
// fiber.Ctx both have these methods.
type Ctx interface {
	// Next runs the rest of the handler chain.
	Next() error
	// Set sets a response header.
	Set(key, val string)
}

// Throttler owns a concurrency window, the goroutines evaluating its triggers, and the middleware that admits
// requests into the window. It is generic over the framework's request context (C) and handler (H); the adapters
// name it Throttler. Create it with NewThrottler and stop it with Close.
type Throttler[C Ctx, H ~func(C) error] struct {
	// Read by every request: the accept path reads the first two only.
	next     func(C) bool
	engine   *Engine
	onReject H
	// The header values of a rejection, built once by the engine: retryAfter is "" when none is sent.
	retryAfter, rejectedBy string
}

// NewThrottler fills the first config's zero fields from defaults (an adapter's ConfigDefault, read at the
// call) or takes defaults without a config, validates it (panicking on invalid values, naming the field),
// registers the metrics, starts one goroutine per trigger (each evaluates its trigger at once, then every
// Interval) and returns the Throttler without waiting for any evaluation. The goroutines stop when Close is
// called or Config.Context is done. lg receives what the Engine logs.
func NewThrottler[C Ctx, H ~func(C) error](defaults Config[C, H], lg Logger, config ...Config[C, H]) *Throttler[C, H] {
	cfg := defaults
	if len(config) > 0 {
		cfg = config[0]
	}
	// Defaults given as the config still go through WithDefaults: it sets the triggers' default timeout.
	cfg = cfg.WithDefaults(defaults)
	cfg.Validate()
	e := NewEngine(cfg, lg)
	return &Throttler[C, H]{
		next:       cfg.Next,
		engine:     e,
		onReject:   cfg.OnReject,
		retryAfter: string(e.RetryAfter()),
		rejectedBy: string(e.RejectedBy()),
	}
}

// Handler returns the middleware. Every call returns an equivalent handler over the same window.
func (t *Throttler[C, H]) Handler() H {
	return H(t.handle)
}

func (t *Throttler[C, H]) handle(c C) error {
	if t.next != nil && t.next(c) {
		return c.Next()
	}
	release, ok := t.engine.TryAcquire()
	if !ok {
		return t.reject(c)
	}
	// Deferred so that the slot comes back when a later handler panics, as well as on success and error.
	defer release()
	return c.Next()
}

// reject sets the rejection headers, whose values the engine formatted once, and hands the request to OnReject.
func (t *Throttler[C, H]) reject(c C) error {
	if t.retryAfter != "" {
		c.Set(HeaderRetryAfter, t.retryAfter)
	}
	c.Set(HeaderRejectedBy, t.rejectedBy)
	return t.onReject(c)
}

// Status returns the window, counters and every trigger's state. GrowthHeld and the triggers' states are read
// together: GrowthHeld is true exactly when a trigger in Triggers is firing. Each call returns fresh values; it is
// safe to call concurrently with requests and evaluations.
func (t *Throttler[C, H]) Status() Status { return t.engine.Status() }

// Close stops the trigger goroutines (cancelling evaluations in progress), waits for them to exit, closes idle
// connections to Prometheus and unregisters the metrics. The middleware keeps admitting requests into the last
// window, which no longer backs off. Close is idempotent, safe to call concurrently with requests, and returns
// nil.
func (t *Throttler[C, H]) Close() error { return t.engine.Close() }
