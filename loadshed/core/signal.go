package core

// Signal is a load measurement: 0 is idle, 1 is the capacity of the resource. The sampler calls Load once per
// Config.Interval, one call at a time, and smooths the readings; a sampler that is late for a reading has it
// taken by the request that finds it due, on that request's goroutine. Load may block for part of an interval
// but should not take longer. An error keeps the previous smoothed load and is counted.
//
// CPU is the default Signal. Implement Signal for another resource: memory use, queue time, a pool's occupancy.
type Signal interface {
	Load() (float64, error)
}

// SignalFunc adapts a function to a Signal.
type SignalFunc func() (float64, error)

// Load calls f.
func (f SignalFunc) Load() (float64, error) { return f() }

// smooth is one step of an exponentially weighted moving average: weight is the share of the new reading.
// The first reading is taken as is.
func smooth(prev, reading, weight float64, first bool) float64 {
	if first {
		return reading
	}
	return (1-weight)*prev + weight*reading
}
