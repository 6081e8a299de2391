package core

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
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
		{"Config.IdleInterval", Config{Interval: time.Second, IdleInterval: 500 * time.Millisecond}},
		{"Config.IdleInterval", Config{IdleInterval: -time.Second}},
		{"Config.Smoothing", Config{Smoothing: 1.5}},
		{"Config.Smoothing", Config{Smoothing: -1}},
		{"Config.CPUs", Config{CPUs: -2}},
		{"Config.Name", Config{Name: "api\r\nX-Injected: 1"}},
	}
	for _, tt := range tests {
		for name, f := range map[string]func(Config){
			"Validate":  func(c Config) { c.Validate() },
			"NewEngine": func(c Config) { _ = NewEngine(c) },
		} {
			func() {
				defer func() {
					r := recover()
					msg, _ := r.(string)
					if !strings.HasPrefix(msg, "loadshed: "+tt.field+" must ") {
						t.Errorf("%s(%+v): panic %v, want one naming %s", name, tt.cfg, r, tt.field)
					}
				}()
				c := tt.cfg.WithDefaults(testDefaults)
				c.Signal, c.DisableMetrics = coretest.NewFixedLoad(0), true
				f(c)
			}()
		}
	}
}

func TestValidDefaultsDoNotPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("the defaults panicked: %v", r)
		}
	}()
	testDefaults.Validate()
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
		cfg := tt.cfg.WithDefaults(testDefaults)
		if math.Abs(cfg.CriticalLower-tt.critLower) > 1e-12 || math.Abs(cfg.CriticalUpper-tt.critUpper) > 1e-12 {
			t.Errorf("%+v: critical band [%v, %v], want [%v, %v]", tt.cfg, cfg.CriticalLower, cfg.CriticalUpper, tt.critLower, tt.critUpper)
		}
	}
}

func TestIdleIntervalDefault(t *testing.T) {
	// The default IdleInterval, or a longer Interval: a user's slow Interval is never made faster.
	tests := []struct{ interval, idle, want time.Duration }{
		{0, 0, 320 * time.Millisecond},
		{5 * time.Millisecond, 0, 320 * time.Millisecond},
		{time.Second, 0, time.Second},
		{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond},
		{20 * time.Millisecond, time.Minute, time.Minute},
	}
	for _, tt := range tests {
		cfg := Config{Interval: tt.interval, IdleInterval: tt.idle}.WithDefaults(testDefaults)
		if cfg.IdleInterval != tt.want {
			t.Errorf("Interval %v, IdleInterval %v: got IdleInterval %v, want %v", tt.interval, tt.idle, cfg.IdleInterval, tt.want)
		}
		cfg.Validate()
	}
}

func TestWithDefaultsFillsOnlyZeroFields(t *testing.T) {
	set := Config{Lower: 0.5, Upper: 0.6, CriticalLower: 0.7, CriticalUpper: 0.8, Interval: time.Second,
		IdleInterval: 2 * time.Second, Smoothing: 0.5, RetryAfter: -1, Name: "api"}
	if got := set.WithDefaults(testDefaults); got != set {
		t.Errorf("WithDefaults changed set fields: %+v, want %+v", got, set)
	}
	if got := (Config{}).WithDefaults(testDefaults); got != testDefaults {
		t.Errorf("WithDefaults of the zero Config = %+v, want the defaults %+v", got, testDefaults)
	}
}
