package core

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Reading is one signal's last load, as reported by Status for a combined signal.
type Reading struct {
	Signal string  `json:"signal"`
	Load   float64 `json:"load"`
	Error  string  `json:"error,omitempty"`
	// Reason says what the signal reads and why (a CPU signal's source, a pressure file).
	Reason string `json:"reason,omitempty"`
}

// Max is a Signal whose load is the highest of its signals' loads: the process is overloaded when any one
// resource is. A signal that fails is left out of that reading; Load fails only when every signal does.
type Max struct {
	signals []Signal
	names   []string

	mu   sync.Mutex
	last []Reading
}

// NewMax combines signals into one whose load is their maximum. It panics when given no signal or a nil one.
func NewMax(signals ...Signal) *Max {
	if len(signals) == 0 {
		panic("loadshed: NewMax needs at least one signal")
	}
	for i, s := range signals {
		if s == nil {
			panic(fmt.Sprintf("loadshed: NewMax signal %d is nil", i))
		}
	}
	c := &Max{signals: signals}
	c.names, c.last = newReadings(signals)
	return c
}

// newReadings returns the names of the parts of a composite signal and a Reading for each, carrying its name
// and what it reads.
func newReadings(signals []Signal) ([]string, []Reading) {
	names, last := make([]string, len(signals)), make([]Reading, len(signals))
	for i, s := range signals {
		names[i] = signalName(s)
		last[i].Signal, last[i].Reason = names[i], signalReason(s)
	}
	return names, last
}

// readInto loads one part of a composite signal and records the outcome in r: its load, or its error (a reading
// that is not a finite number >= 0 is one), keeping the last load.
func readInto(r *Reading, sig Signal) (float64, error) {
	load, err := sig.Load()
	if err == nil && !validLoad(load) {
		err = errBadReading
	}
	if err != nil {
		r.Error = err.Error()
		return 0, err
	}
	r.Load, r.Error = load, ""
	return load, nil
}

// Load reads every signal and returns the highest load.
func (c *Max) Load() (float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, ok := 0.0, false
	var errs []error
	for i, s := range c.signals {
		load, err := readInto(&c.last[i], s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok || load > best {
			best, ok = load, true
		}
	}
	if !ok {
		return 0, errors.Join(errs...)
	}
	return best, nil
}

// Readings returns each signal's last load.
func (c *Max) Readings() []Reading {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Reading(nil), c.last...)
}

// Signals returns the combined signals, in order.
func (c *Max) Signals() []Signal { return append([]Signal(nil), c.signals...) }

// String describes the signal, for logs and Status.
func (c *Max) String() string { return "max(" + strings.Join(c.names, ", ") + ")" }

// signalReason is what a built-in signal says about its source, or "".
func signalReason(s Signal) string {
	if r, ok := s.(interface{ Reason() string }); ok {
		return r.Reason()
	}
	return ""
}

// signalName is a signal's description: its String method, or "custom".
func signalName(s Signal) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return "custom"
}
