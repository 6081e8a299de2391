package core

// Policy maps a load to a shedding probability. Its zero value sheds nothing until the load exceeds 0 and
// everything above it; use the values from Config (see ConfigDefault).
//
// A Policy holds two bands: [Lower, Upper] for ordinary requests and [CriticalLower, CriticalUpper] for critical
// ones, so critical traffic keeps flowing while ordinary traffic is being shed.
type Policy struct {
	Lower, Upper                 float64
	CriticalLower, CriticalUpper float64
}

// Probability returns the share of requests to reject at the given load: 0 at or below lower, 1 at or above
// upper, linear in between. A NaN load counts as no load, so a broken signal never rejects traffic by itself.
func Probability(load, lower, upper float64) float64 {
	switch {
	case !(load > lower): // also catches NaN
		return 0
	case load >= upper:
		return 1
	default:
		return (load - lower) / (upper - lower)
	}
}

// Probabilities returns the shedding probability for ordinary and for critical requests at load.
func (p Policy) Probabilities(load float64) (normal, critical float64) {
	return Probability(load, p.Lower, p.Upper), Probability(load, p.CriticalLower, p.CriticalUpper)
}

// Shed decides one request: r is a uniform random number in [0, 1) drawn by the caller. It returns true when the
// request must be rejected. Each call is a coin of its own; Engine.Admit instead spreads its rejections evenly
// over the requests at the same probability.
func (p Policy) Shed(load float64, critical bool, r float64) bool {
	normal, crit := p.Probabilities(load)
	if critical {
		return shed(crit, r)
	}
	return shed(normal, r)
}

// shed rejects with probability prob given a uniform r in [0, 1): never at 0, always at 1.
func shed(prob, r float64) bool {
	return prob > 0 && r < prob
}
