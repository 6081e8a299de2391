package throttle

import "time"

// Snapshot is a point-in-time view of a Throttler, for status pages.
type Snapshot struct {
	Window    int `json:"window"`
	InFlight  int `json:"in_flight"`
	WindowMin int `json:"window_min"`
	WindowMax int `json:"window_max"`
	// GrowthHeld: a signal fires, so completions do not grow the window.
	GrowthHeld bool           `json:"growth_held"`
	Admitted   uint64         `json:"admitted"`
	Rejected   uint64         `json:"rejected"`
	Signals    []SignalStatus `json:"signals"`
}

// SignalStatus is a signal's state in a Snapshot.
type SignalStatus struct {
	Name string `json:"name"`
	// Kind is "promql" or "func".
	Kind string `json:"kind"`
	// Firing is the state the window acts on.
	Firing bool `json:"firing"`
	// Verdict is what the last evaluation found: "no_data", "false", "firing", "error" (a failure that may pass)
	// or "invalid" (the query can never succeed as written); empty before the first evaluation.
	Verdict string `json:"verdict"`
	// Held: the last evaluation failed and the previous value is kept. Stale: the fail mode decides.
	Held  bool `json:"held"`
	Stale bool `json:"stale"`
	// Invalid: Prometheus rejected the query (a PromQL syntax or type error) or its result can never be a
	// signal. The signal does not fire, in either fail mode, until an evaluation succeeds.
	Invalid bool `json:"invalid"`
	// Evaluations counts evaluations (a signal not evaluated yet has 0); Errors counts failed ones, invalid
	// included.
	Evaluations uint64 `json:"evaluations"`
	Errors      uint64 `json:"errors"`
	Backoffs    uint64 `json:"backoffs"`
	LastError   string `json:"last_error,omitempty"`
	// LastSuccess is when an evaluation last succeeded; nil (JSON null) before the first success.
	LastSuccess *time.Time `json:"last_success"`
}

// signalRecord is what the snapshot and the metrics report about one signal: the evaluations applied so far.
type signalRecord struct {
	name, kind  string
	state       State
	evaluations uint64
	errors      uint64
	backoffs    uint64
	byVerdict   [numVerdicts]uint64
	errText     string
	lastSuccess time.Time // zero before the first success
}

// record adds an applied evaluation.
func (r *signalRecord) record(now time.Time, state State, err error) {
	r.state = state
	r.evaluations++
	r.byVerdict[state.Verdict]++
	if err != nil {
		r.errors++
		r.errText = err.Error()
	} else {
		r.errText = ""
		r.lastSuccess = now
	}
	if state.Firing {
		r.backoffs++
	}
}

// status returns the signal's state as the snapshot shows it.
func (r *signalRecord) status() SignalStatus {
	st := SignalStatus{
		Name:        r.name,
		Kind:        r.kind,
		Firing:      r.state.Firing,
		Held:        r.state.Held,
		Stale:       r.state.Stale,
		Invalid:     r.state.Invalid,
		Evaluations: r.evaluations,
		Errors:      r.errors,
		Backoffs:    r.backoffs,
		LastError:   r.errText,
	}
	if r.evaluations > 0 {
		st.Verdict = r.state.Verdict.String()
	}
	if !r.lastSuccess.IsZero() {
		at := r.lastSuccess // a copy: the snapshot must not share the record's memory
		st.LastSuccess = &at
	}
	return st
}

// Snapshot returns the window, counters and every signal's state. GrowthHeld and the signals' states are read
// together: GrowthHeld is true exactly when a signal in Signals is firing.
func (t *Throttler) Snapshot() Snapshot { return t.snapshot(nil) }

// snapshot is Snapshot that also copies, when byVerdict is not nil (one entry per signal), every signal's
// evaluations by verdict, read under the same lock.
func (t *Throttler) snapshot(byVerdict [][numVerdicts]uint64) Snapshot {
	s := Snapshot{
		Window:    t.window.Size(),
		InFlight:  t.window.InFlight(),
		WindowMin: t.window.Min(),
		WindowMax: t.window.Max(),
		Admitted:  t.admitted.Load(),
		Rejected:  t.rejected.Load(),
		Signals:   make([]SignalStatus, len(t.records)),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s.GrowthHeld = t.window.Held()
	for i := range t.records {
		s.Signals[i] = t.records[i].status()
		if byVerdict != nil {
			byVerdict[i] = t.records[i].byVerdict
		}
	}
	return s
}
