package main

import (
	"testing"
	"time"
)

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

func TestUsageString(t *testing.T) {
	tests := []struct {
		u    usage
		want string
	}{
		{usage{cores: 0.97, perOK: 1210 * time.Microsecond}, "0.97 · 1.21 ms"},
		{usage{cores: 1.004, perOK: 1125 * time.Microsecond}, "1.00 · 1.12 ms"},
		{usage{cores: 0.11}, "0.11 · –"}, // every request shed: no 200 to divide by
		{usage{}, "0.00 · –"},
	}
	for _, tt := range tests {
		if got := tt.u.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.u, got, tt.want)
		}
	}
}
