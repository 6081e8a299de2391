package loadshed

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestConfigPanicsNameTheField(t *testing.T) {
	tests := []struct {
		field string
		cfg   Config
	}{
		{"Config.Lower", Config{Lower: -0.1}},
		{"Config.Lower", Config{Lower: math.NaN()}},
		{"Config.Upper", Config{Lower: 0.9, Upper: 0.8}},
		{"Config.Upper", Config{Lower: 0.9, Upper: 0.9}},
		{"Config.CriticalLower", Config{CriticalLower: 0.5}},
		{"Config.CriticalUpper", Config{CriticalLower: 0.99, CriticalUpper: 0.98}},
		{"Config.Interval", Config{Interval: -time.Second}},
		{"Config.Smoothing", Config{Smoothing: 1.5}},
		{"Config.Smoothing", Config{Smoothing: -1}},
		{"Config.CPUs", Config{CPUs: -2}},
		{"Config.Name", Config{Name: "api\r\nX-Injected: 1"}},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tt.field) {
					t.Errorf("config %+v: panic %v, want one naming %s", tt.cfg, r, tt.field)
				}
			}()
			tt.cfg.Signal = newFixedLoad(0)
			tt.cfg.DisableMetrics = true
			_ = NewShedder(tt.cfg)
		}()
	}
}

func TestDefaultsFollowACustomUpper(t *testing.T) {
	// A user who raises Upper above the default critical band gets a critical band above it.
	tests := []struct {
		cfg                  Config
		critLower, critUpper float64
	}{
		{Config{}, 0.98, 1.0},
		{Config{Lower: 0.97, Upper: 0.99}, 0.99, 1.0},
		{Config{Lower: 0.95, Upper: 1.0}, 1.0, 1.05},
		{Config{CriticalLower: 0.99}, 0.99, 1.0},
	}
	for _, tt := range tests {
		tt.cfg.DisableMetrics = true
		cfg := configDefault(tt.cfg)
		if math.Abs(cfg.CriticalLower-tt.critLower) > 1e-12 || math.Abs(cfg.CriticalUpper-tt.critUpper) > 1e-12 {
			t.Errorf("%+v: critical band [%v, %v], want [%v, %v]", tt.cfg, cfg.CriticalLower, cfg.CriticalUpper, tt.critLower, tt.critUpper)
		}
	}
}
