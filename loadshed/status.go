package loadshed

import "time"

// Status is a point-in-time view of a Shedder, for status pages. Its JSON keys are snake_case.
type Status struct {
	Name string `json:"name"` // Config.Name
	// UpdatedAt is when the load was last read; null until a reading succeeds (the first is taken in
	// NewShedder, so it is normally set).
	UpdatedAt           *time.Time `json:"updated_at"`
	Load                float64    `json:"load"`
	Probability         float64    `json:"probability"`
	CriticalProbability float64    `json:"critical_probability"`
	// Counters since NewShedder. In dry-run mode Rejected counts the requests that would have been rejected.
	Admitted         uint64 `json:"admitted"`
	Rejected         uint64 `json:"rejected"`
	CriticalAdmitted uint64 `json:"critical_admitted"`
	CriticalRejected uint64 `json:"critical_rejected"`
	SamplerErrors    uint64 `json:"sampler_errors"`
	DryRun           bool   `json:"dry_run"`
	Signal           string `json:"signal"`
	// IntervalSeconds is Config.Interval: how often the load is read.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Readings holds each signal's last load when Signal combines several (the default does), or the one
	// signal's when it says what it reads; and what each reads and why. Empty for a custom signal.
	Readings []Reading `json:"readings"`
}

// Status returns the current load, probabilities and counters. Each call returns fresh values; it is safe to
// call concurrently with requests and the sampler.
func (s *Shedder) Status() Status {
	st := s.state.Load()
	var updated *time.Time
	if !st.at.IsZero() {
		at := st.at
		updated = &at
	}
	return Status{
		Name:                s.name,
		UpdatedAt:           updated,
		Load:                st.load,
		Probability:         st.normal,
		CriticalProbability: st.critical,
		Admitted:            s.normal.admitted.Load(),
		Rejected:            s.normal.rejected.Load(),
		CriticalAdmitted:    s.crit.admitted.Load(),
		CriticalRejected:    s.crit.rejected.Load(),
		SamplerErrors:       s.samplerErrors.Load(),
		DryRun:              s.dryRun,
		Signal:              s.signalName,
		IntervalSeconds:     s.interval.Seconds(),
		Readings:            s.readings(st.load),
	}
}

func (s *Shedder) readings(load float64) []Reading {
	if c, ok := s.signal.(*Combined); ok {
		return c.Readings()
	}
	if r := signalReason(s.signal); r != "" {
		return []Reading{{Signal: s.signalName, Load: load, Reason: r}}
	}
	return []Reading{}
}
