package core

import "time"

// EWMA parameters of the connect-time average.
const (
	// ewmaAlpha weighs a new sample against the average.
	ewmaAlpha = 0.3
	// ewmaCapFactor caps a sample at this multiple of the average, so one stalled dial cannot throw an upstream
	// far out of its tier.
	ewmaCapFactor = 4
	// ewmaCapFloor is the smallest cap: below it, sub-millisecond averages would turn every ordinary jitter
	// into a capped outlier.
	ewmaCapFloor = 2 * time.Millisecond
	// ewmaResetDivisor: a sample below avg/ewmaResetDivisor replaces the average, so an upstream whose first dial
	// was slow (cold ARP, SYN retransmit) recovers in one round instead of decaying for many.
	ewmaResetDivisor = 4
)

// ewma is the exponentially weighted moving average of an upstream's connect time. The zero value holds no
// sample.
type ewma struct {
	avg     time.Duration
	sampled bool
}

// add folds one successful connect time into the average and returns the new average. Failed dials are not
// samples and must not be passed here.
func (e *ewma) add(sample time.Duration) time.Duration {
	if sample < 0 {
		sample = 0
	}
	if !e.sampled {
		e.avg, e.sampled = sample, true
		return e.avg
	}
	if limit := max(ewmaCapFactor*e.avg, ewmaCapFloor); sample > limit {
		sample = limit
	}
	if sample < e.avg/ewmaResetDivisor {
		e.avg = sample
		return e.avg
	}
	e.avg += time.Duration(ewmaAlpha * float64(sample-e.avg))
	return e.avg
}
