package core

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
)

func TestConfigPanicsNameTheField(t *testing.T) {
	tests := []struct {
		field string
		cfg   testConfig
	}{
		{"Config.Lower", testConfig{Lower: -0.1}},
		{"Config.Lower", testConfig{Lower: math.NaN()}},
		{"Config.Upper", testConfig{Lower: 0.9, Upper: 0.8}},
		{"Config.Upper", testConfig{Lower: 0.9, Upper: 0.9}},
		{"Config.CriticalLower", testConfig{CriticalLower: 0.5}},
		{"Config.CriticalUpper", testConfig{CriticalLower: 0.99, CriticalUpper: 0.98}},
		{"Config.Interval", testConfig{Interval: -time.Second}},
		{"Config.IdleInterval", testConfig{Interval: time.Second, IdleInterval: 500 * time.Millisecond}},
		{"Config.IdleInterval", testConfig{IdleInterval: -time.Second}},
		{"Config.Smoothing", testConfig{Smoothing: 1.5}},
		{"Config.Smoothing", testConfig{Smoothing: -1}},
		{"Config.CPUs", testConfig{CPUs: -2}},
		{"Config.Target", testConfig{Target: -0.5}},
		{"Config.Target", testConfig{Target: 1.01}},
		{"Config.Target", testConfig{Target: math.Inf(1)}},
		{"Config.Name", testConfig{Name: "api\r\nX-Injected: 1"}},
	}
	// A nil OnReject is the middleware's concern: Validate names it, an Engine never calls it.
	func() {
		defer func() {
			if msg, _ := recover().(string); msg != "loadshed: Config.OnReject must not be nil" {
				t.Errorf("Validate with OnReject nil: panic %q, want one naming Config.OnReject", msg)
			}
		}()
		c := testDefaults
		c.OnReject = nil
		c.Validate()
	}()
	for _, tt := range tests {
		for name, f := range map[string]func(testConfig){
			"Validate":  func(c testConfig) { c.Validate() },
			"NewEngine": func(c testConfig) { _ = NewEngine(c, nil) },
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
		cfg                  testConfig
		critLower, critUpper float64
	}{
		{testConfig{}, 0.98, 1.0},
		{testConfig{Lower: 0.97, Upper: 0.99}, 0.99, 1.0},
		{testConfig{Lower: 0.95, Upper: 1.0}, 1.0, 1.05},
		{testConfig{CriticalLower: 0.99}, 0.99, 1.0},
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
		cfg := testConfig{Interval: tt.interval, IdleInterval: tt.idle}.WithDefaults(testDefaults)
		if cfg.IdleInterval != tt.want {
			t.Errorf("Interval %v, IdleInterval %v: got IdleInterval %v, want %v", tt.interval, tt.idle, cfg.IdleInterval, tt.want)
		}
		cfg.Validate()
	}
}

func TestWithDefaultsFillsOnlyZeroFields(t *testing.T) {
	set := testConfig{Lower: 0.5, Upper: 0.6, CriticalLower: 0.7, CriticalUpper: 0.8, Target: 0.9, Interval: time.Second,
		IdleInterval: 2 * time.Second, Smoothing: 0.5, RetryAfter: -1, Name: "api"}
	set.OnReject = "custom reject"
	if got := set.WithDefaults(testDefaults); !reflect.DeepEqual(got, set) {
		t.Errorf("WithDefaults changed set fields: %+v, want %+v", got, set)
	}
	if got := (testConfig{}).WithDefaults(testDefaults); !reflect.DeepEqual(got, testDefaults) {
		t.Errorf("WithDefaults of the zero Config = %+v, want the defaults %+v", got, testDefaults)
	}
}

// A handler interface holding a nil func is as nil as the interface itself: it would panic when called.
func TestIsNilSeesANilFuncInAnInterface(t *testing.T) {
	type handler interface{ serve() }
	var none handler
	var nilFunc handler = handlerFunc(nil)
	var someFunc handler = handlerFunc(func() {})
	if !isNil(none) || !isNil(nilFunc) || isNil(someFunc) || !isNil[func()](nil) || isNil("reject") {
		t.Fatalf("isNil: nil interface %v, interface of a nil func %v, of a func %v, nil func %v, a string %v",
			isNil(none), isNil(nilFunc), isNil(someFunc), isNil[func()](nil), isNil("reject"))
	}
}

type handlerFunc func()

func (f handlerFunc) serve() { f() }
