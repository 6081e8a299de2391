package core

import "time"

// Status is a point-in-time view of a throttle, for status pages.
type Status struct {
	// Name is Config.Name.
	Name string `json:"name"`
	// UpdatedAt is when the last evaluation of any trigger was applied; nil (JSON null) before the first, and
	// for ever without triggers.
	UpdatedAt *time.Time `json:"updated_at"`
	Window    int        `json:"window"`
	InFlight  int        `json:"in_flight"`
	WindowMin int        `json:"window_min"`
	WindowMax int        `json:"window_max"`
	// GrowthHeld: a trigger fires, so completions do not grow the window.
	GrowthHeld bool            `json:"growth_held"`
	Admitted   uint64          `json:"admitted"`
	Rejected   uint64          `json:"rejected"`
	Triggers   []TriggerStatus `json:"triggers"`
}

// TriggerStatus is a trigger's state in a Status.
type TriggerStatus struct {
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
	// trigger. The trigger does not fire, in either fail mode, until an evaluation succeeds.
	Invalid bool `json:"invalid"`
	// Evaluations counts evaluations (a trigger not evaluated yet has 0); Errors counts failed ones, invalid
	// included.
	Evaluations uint64 `json:"evaluations"`
	Errors      uint64 `json:"errors"`
	Backoffs    uint64 `json:"backoffs"`
	LastError   string `json:"last_error,omitempty"`
	// LastSuccess is when an evaluation last succeeded; nil (JSON null) before the first success.
	LastSuccess *time.Time `json:"last_success"`
}

// triggerRecord is what Status and the metrics report about one trigger: the evaluations applied so far.
type triggerRecord struct {
	name, kind  string
	state       TriggerState
	evaluations uint64
	errors      uint64
	backoffs    uint64
	byVerdict   [numVerdicts]uint64
	errText     string
	lastSuccess time.Time // zero before the first success
}

// record adds an applied evaluation.
func (r *triggerRecord) record(now time.Time, state TriggerState, err error) {
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

// status returns the trigger's state as Status shows it.
func (r *triggerRecord) status() TriggerStatus {
	st := TriggerStatus{
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
		at := r.lastSuccess // a copy: a Status must not share the record's memory
		st.LastSuccess = &at
	}
	return st
}

// Status returns the window, counters and every trigger's state. GrowthHeld and the triggers' states are read
// together: GrowthHeld is true exactly when a trigger in Triggers is firing.
func (e *Engine) Status() Status { return e.view(nil) }

// view is Status that also copies, when byVerdict is not nil (one entry per trigger), every trigger's
// evaluations by verdict, read under the same lock.
func (e *Engine) view(byVerdict [][numVerdicts]uint64) Status {
	s := Status{
		Name:      e.name,
		Window:    e.window.Size(),
		InFlight:  e.window.InFlight(),
		WindowMin: e.window.Min(),
		WindowMax: e.window.Max(),
		Admitted:  e.admitted.Load(),
		Rejected:  e.rejected.Load(),
		Triggers:  make([]TriggerStatus, len(e.records)),
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s.GrowthHeld = e.window.Held()
	if !e.updatedAt.IsZero() {
		at := e.updatedAt // a copy, as for LastSuccess
		s.UpdatedAt = &at
	}
	for i := range e.records {
		s.Triggers[i] = e.records[i].status()
		if byVerdict != nil {
			byVerdict[i] = e.records[i].byVerdict
		}
	}
	return s
}
