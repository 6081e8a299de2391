package main

import "testing"

func TestSpread(t *testing.T) {
	tests := []struct {
		v      []float64
		scale  float64
		format string
		want   string
	}{
		{nil, 1, "%.1f", "–"},
		{[]float64{0.5}, 100, "%.0f%%", "50% (50%–50%)"},
		{[]float64{3, 1, 2}, 1, "%.1f", "2.0 (1.0–3.0)"},
		{[]float64{4, 1, 2, 3}, 1, "%.1f", "2.5 (1.0–4.0)"},
		{[]float64{0.012, 0.001}, 100, "%.1f %%", "0.7 % (0.1 %–1.2 %)"},
	}
	for _, tt := range tests {
		if got := spread(tt.v, tt.scale, tt.format); got != tt.want {
			t.Errorf("spread(%v, %v, %q) = %q, want %q", tt.v, tt.scale, tt.format, got, tt.want)
		}
	}
}
