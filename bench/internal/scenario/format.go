package scenario

import (
	"strconv"
	"strings"
	"time"
)

// Ms formats a duration in milliseconds with one decimal ("12.5 ms", "3 ms"); "–" for no value.
func Ms(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64), ".0") + " ms"
}

// Pct formats a fraction as a percentage with one decimal ("12.5 %").
func Pct(f float64) string {
	return strconv.FormatFloat(100*f, 'f', 1, 64) + " %"
}
