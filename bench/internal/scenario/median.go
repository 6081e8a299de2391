package scenario

import "slices"

// Median is the middle of v (the mean of the two middle values for an even count), 0 for none. v is not changed.
func Median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
