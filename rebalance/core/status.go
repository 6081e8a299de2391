package core

import "time"

// Status is a node's view of the cluster after its last interval. It is ready for JSON (a status page); it has no
// rejection count because the middleware rejects nothing: a shed request is answered, and only its connection
// closes after it.
type Status struct {
	// Name is Config.Name.
	Name string `json:"name"`
	// UpdatedAt is when the last interval ended; nil (null) before the first has.
	UpdatedAt *time.Time `json:"updated_at"`
	// Decision is what the node decided in the last interval, and why.
	Decision Decision `json:"decision"`
	// Connections is the node's open connections at the last interval.
	Connections int `json:"connections"`
	// Counted is the number the decision used: the lowest count over Config.Window.
	Counted int `json:"counted"`
	// Average is the cluster's mean open connections per live node (0 when unknown).
	Average float64 `json:"average"`
	// Nodes is the number of live nodes in the reading.
	Nodes int `json:"nodes"`
	// Balance is (Counted - Average) / Average (0 when the average is unknown).
	Balance float64 `json:"balance"`
	// Budget is the number of connections granted for shedding in the last interval.
	Budget int `json:"budget"`
	// Shed is the number of connections closed since New.
	Shed uint64 `json:"shed"`
	// SourceErrors is the number of failed readings of the cluster since New.
	SourceErrors uint64 `json:"source_errors"`
	// LastError is the latest source error, kept until a reading succeeds.
	LastError string `json:"last_error,omitempty"`

	known bool // Average and Balance hold a usable reading
}

// Status returns the node's view after its last interval: a fresh value, safe to call concurrently.
func (e *Engine) Status() Status {
	s := *e.status.Load()
	s.Name = e.name
	if s.UpdatedAt != nil {
		at := *s.UpdatedAt
		s.UpdatedAt = &at // the caller's to change
	}
	s.Shed = e.shed.Load()
	s.SourceErrors = e.errs.Load()
	return s
}
