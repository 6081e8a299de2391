package core

import (
	"math"
	"testing"
)

func TestProbability(t *testing.T) {
	tests := []struct {
		name               string
		load, lower, upper float64
		want               float64
	}{
		{"idle", 0, 0.90, 0.95, 0},
		{"below lower", 0.5, 0.90, 0.95, 0},
		{"at lower", 0.90, 0.90, 0.95, 0},
		{"quarter", 0.9125, 0.90, 0.95, 0.25},
		{"middle", 0.925, 0.90, 0.95, 0.5},
		{"at upper", 0.95, 0.90, 0.95, 1},
		{"above upper", 1.3, 0.90, 0.95, 1},
		{"negative", -1, 0.90, 0.95, 0},
		{"NaN sheds nothing", math.NaN(), 0.90, 0.95, 0},
		{"+Inf sheds everything", math.Inf(1), 0.90, 0.95, 1},
		{"wide band", 0.5, 0, 1, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Probability(tt.load, tt.lower, tt.upper)
			if math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("Probability(%v, %v, %v) = %v, want %v", tt.load, tt.lower, tt.upper, got, tt.want)
			}
		})
	}
}

func TestPolicyShed(t *testing.T) {
	// Bounds that are exact in binary, so "r equal to p" is exactly at the boundary.
	p := Policy{Lower: 0.5, Upper: 0.75, CriticalLower: 0.875, CriticalUpper: 1.0}
	tests := []struct {
		name     string
		load     float64
		critical bool
		r        float64
		want     bool
	}{
		{"below lower never sheds, even r=0", 0.4, false, 0, false},
		{"at lower never sheds", 0.5, false, 0, false},
		{"middle sheds r below p", 0.625, false, 0.49, true},
		{"middle admits r at p", 0.625, false, 0.5, false},
		{"middle admits r above p", 0.625, false, 0.51, false},
		{"above upper sheds r near 1", 0.8, false, 0.999999, true},
		{"critical admitted where ordinary is all shed", 0.8, true, 0, false},
		{"critical admitted at its lower bound", 0.875, true, 0, false},
		{"critical middle sheds r below p", 0.9375, true, 0.49, true},
		{"critical middle admits r at p", 0.9375, true, 0.5, false},
		{"critical shed above its upper", 1.01, true, 0.999999, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Shed(tt.load, tt.critical, tt.r); got != tt.want {
				t.Fatalf("Shed(load=%v, critical=%v, r=%v) = %v, want %v", tt.load, tt.critical, tt.r, got, tt.want)
			}
		})
	}
}

func TestSmooth(t *testing.T) {
	tests := []struct {
		name                  string
		prev, reading, weight float64
		first                 bool
		want                  float64
	}{
		{"first reading taken as is", 0, 0.8, 0.1, true, 0.8},
		{"weight of the new reading", 0.5, 1.0, 0.1, false, 0.55},
		{"falls as it rises", 0.5, 0.0, 0.1, false, 0.45},
		{"weight 1 disables smoothing", 0.2, 0.9, 1, false, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := smooth(tt.prev, tt.reading, tt.weight, tt.first); math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("smooth = %v, want %v", got, tt.want)
			}
		})
	}
}
