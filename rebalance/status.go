package rebalance

import "time"

// Status is a node's view of the cluster after its last interval.
type Status struct {
	// Decision is what the node decided and why.
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
	// Shed is the number of connections closed since the start.
	Shed uint64 `json:"shed_total"`
	// SourceErrors is the number of failed readings since the start.
	SourceErrors uint64 `json:"source_errors_total"`
	// LastError is the latest source error, kept until a reading succeeds.
	LastError string `json:"last_error,omitempty"`
	// UpdatedAt is when the last interval ended.
	UpdatedAt time.Time `json:"updated_at"`

	known bool // Average and Balance hold a usable reading
}

// Status returns the node's state after its last interval.
func (r *Rebalancer) Status() Status {
	s := *r.status.Load()
	s.Shed = r.shed.Load()
	s.SourceErrors = r.errs.Load()
	return s
}
