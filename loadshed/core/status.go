package core

import "time"

// Status is a point-in-time view of a shedder, for status pages. Its JSON keys are snake_case.
type Status struct {
	Name string `json:"name"` // Config.Name
	// UpdatedAt is when the load was last read; null until a reading succeeds (the first is taken before
	// NewShedder returns, so it is normally set).
	UpdatedAt           *time.Time `json:"updated_at"`
	Load                float64    `json:"load"`
	Probability         float64    `json:"probability"`
	CriticalProbability float64    `json:"critical_probability"`
	// Counters since NewShedder. In dry-run mode Rejected counts the requests that would have been rejected.
	Admitted         uint64 `json:"admitted"`
	Rejected         uint64 `json:"rejected"`
	CriticalAdmitted uint64 `json:"critical_admitted"`
	CriticalRejected uint64 `json:"critical_rejected"`
	// InFlight is the requests admitted whose handlers have not returned; Limit the in-flight limit the default
	// controller set at its last reading (0: none), above which ordinary requests are rejected (critical ones
	// above twice it).
	InFlight      int64  `json:"in_flight"`
	Limit         int64  `json:"limit"`
	SamplerErrors uint64 `json:"sampler_errors"`
	DryRun        bool   `json:"dry_run"`
	Signal        string `json:"signal"`
	// IntervalSeconds is Config.Interval: how often the load is read. IdleIntervalSeconds is Config.IdleInterval,
	// the longest wait between readings while the load is quiet; Resting is true while the sampler waits longer
	// than Interval.
	IntervalSeconds     float64 `json:"interval_seconds"`
	IdleIntervalSeconds float64 `json:"idle_interval_seconds"`
	Resting             bool    `json:"resting"`
	// Readings holds each signal's last load when Signal combines several (the default does), or the one
	// signal's when it says what it reads; and what each reads and why. Empty for a custom signal.
	Readings []Reading `json:"readings"`
}

// Status returns the current load, probabilities and counters. Each call returns fresh values; it is safe to
// call concurrently with requests and the sampler.
func (e *Engine) Status() Status {
	st := e.state.Load()
	var updated *time.Time
	if !st.at.IsZero() {
		at := st.at
		updated = &at
	}
	return Status{
		Name:                e.name,
		UpdatedAt:           updated,
		Load:                st.load,
		Probability:         st.normal,
		CriticalProbability: st.critical,
		Admitted:            e.normal.admitted.Load(),
		Rejected:            e.normal.rejected.Load(),
		CriticalAdmitted:    e.crit.admitted.Load(),
		CriticalRejected:    e.crit.rejected.Load(),
		InFlight:            e.InFlight(),
		Limit:               st.limit,
		SamplerErrors:       e.samplerErrors.Load(),
		DryRun:              e.dryRun,
		Signal:              e.signalName,
		IntervalSeconds:     e.pace.interval.Seconds(),
		IdleIntervalSeconds: e.pace.idle.Seconds(),
		Resting:             st.resting,
		Readings:            e.readings(st.load),
	}
}

func (e *Engine) readings(load float64) []Reading {
	if c, ok := e.signal.(interface{ Readings() []Reading }); ok {
		return c.Readings()
	}
	if r := signalReason(e.signal); r != "" {
		return []Reading{{Signal: e.signalName, Load: load, Reason: r}}
	}
	return []Reading{}
}
