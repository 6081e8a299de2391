package core

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidatePanicsNamingTheField(t *testing.T) {
	fn := func(context.Context) (bool, error) { return false, nil }
	tests := []struct {
		name string
		cfg  Config[any, any]
		want string
	}{
		{"min < 1", Config[any, any]{WindowMin: -1}, "Config.WindowMin"},
		{"min > max", Config[any, any]{WindowMin: 20, WindowMax: 10}, "Config.WindowMax must be >= Config.WindowMin"},
		{"max too large", Config[any, any]{WindowMax: MaxWindow + 1}, "Config.WindowMax must be <="},
		{"empty query", Config[any, any]{PrometheusURL: "http://127.0.0.1:9090", Queries: []string{"up", " "}}, "Config.Queries[1]"},
		{"unparsable URL", Config[any, any]{PrometheusURL: "http://[::1", Queries: []string{"up"}}, "Config.PrometheusURL"},
		{"URL without scheme", Config[any, any]{PrometheusURL: "127.0.0.1:9090", Queries: []string{"up"}}, "Config.PrometheusURL"},
		{"queries without URL", Config[any, any]{Queries: []string{"up"}}, "Config.PrometheusURL must be set"},
		{"trigger query without URL", Config[any, any]{Triggers: []Trigger{{Query: "up"}}}, "Config.PrometheusURL must be set when Config.Triggers[0].Query"},
		{"trigger with neither", Config[any, any]{Triggers: []Trigger{{Func: fn}, {Name: "x"}}}, "Config.Triggers[1].Query"},
		{"trigger with both", Config[any, any]{PrometheusURL: "http://p:9090", Triggers: []Trigger{{Query: "up", Func: fn}}}, "Config.Triggers[0] must set only one"},
		{"duplicate names", Config[any, any]{Triggers: []Trigger{{Name: "q", Func: fn}, {Name: "q", Func: fn}}}, "Config.Triggers[1].Name must be unique, \"q\" is used twice"},
		{"a name used by default", Config[any, any]{Triggers: []Trigger{{Func: fn}, {Name: "trigger_0", Func: fn}}}, "Config.Triggers[1].Name must be unique"},
		{"a query's name", Config[any, any]{PrometheusURL: "http://p:9090", Queries: []string{"up"}, Triggers: []Trigger{{Name: "query_0", Func: fn}}}, "Config.Triggers[0].Name must be unique"},
		{"negative interval", Config[any, any]{Interval: -time.Second}, "Config.Interval"},
		{"negative timeout", Config[any, any]{Timeout: -time.Second}, "Config.Timeout"},
		{"negative staleness", Config[any, any]{Staleness: -time.Second}, "Config.Staleness"},
		{"trigger interval", Config[any, any]{Triggers: []Trigger{{Func: fn, Interval: -1}}}, "Config.Triggers[0].Interval"},
		{"trigger timeout", Config[any, any]{Triggers: []Trigger{{Func: fn, Timeout: -1}}}, "Config.Triggers[0].Timeout"},
		{"fail mode", Config[any, any]{FailMode: 7}, "Config.FailMode"},
		{"name breaking the header", Config[any, any]{Name: "api\r\nSet-Cookie: x"}, "Config.Name must not contain control characters"},
	}
	for _, tt := range tests {
		for name, f := range map[string]func(Config[any, any]){
			"Validate":  func(c Config[any, any]) { c.Validate() },
			"NewEngine": func(c Config[any, any]) { _ = NewEngine(c, nil) },
		} {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				defer func() {
					r := recover()
					msg, _ := r.(string)
					if r == nil || !strings.HasPrefix(msg, "throttle: Config.") || !strings.Contains(msg, " must ") || !strings.Contains(msg, tt.want) {
						t.Fatalf("panic %v, want a message naming %q", r, tt.want)
					}
				}()
				cfg := tt.cfg.WithDefaults(testDefaults)
				cfg.DisableMetrics = true
				f(cfg)
			})
		}
	}
}

// TestValidateNeedsAnInterval: a config that did not go through WithDefaults is checked too, rather than
// starting a ticker of period 0.
func TestValidateNeedsAnInterval(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "throttle: Config.Interval must be positive") {
			t.Fatalf("panic %q, want one naming Config.Interval", msg)
		}
	}()
	Config[any, any]{WindowMin: 1, WindowMax: 1, OnReject: testDefaults.OnReject}.Validate()
}

// TestOnRejectIsRequired: Validate needs a rejection handler, which WithDefaults takes from the defaults; an
// Engine, which never rejects a request itself, does not.
func TestOnRejectIsRequired(t *testing.T) {
	func() {
		defer func() {
			if msg, _ := recover().(string); msg != "throttle: Config.OnReject must not be nil" {
				t.Fatalf("panic %q, want one naming Config.OnReject", msg)
			}
		}()
		Config[any, any]{}.WithDefaults(Defaults[any, any](nil)).Validate()
	}()
	Config[any, any]{}.WithDefaults(testDefaults).Validate()
	NewEngine(Config[any, any]{DisableMetrics: true}.WithDefaults(Defaults[any, any](nil)), nil).Close()
}

// TestDefaults: the adapters' ConfigDefault, and what WithDefaults makes of an empty Config.
func TestDefaults(t *testing.T) {
	type handler func(*struct{}) error
	reject := handler(func(*struct{}) error { return nil })
	d := Defaults[*struct{}, handler](reject)
	if d.WindowMin != 10 || d.WindowMax != 1000 || d.Interval != 15*time.Second || d.Timeout != 5*time.Second ||
		d.FailMode != FailOpen || d.RetryAfter != time.Second || d.Name != "default" || d.OnReject == nil ||
		d.Next != nil || d.Registerer != nil || d.Context != nil || d.RoundTripper != nil {
		t.Fatalf("defaults %+v", d)
	}
	if c := (Config[*struct{}, handler]{}).WithDefaults(d); c.OnReject == nil {
		t.Fatal("WithDefaults left OnReject nil")
	}
	own := handler(func(*struct{}) error { return errors.New("own") })
	if c := (Config[*struct{}, handler]{OnReject: own}).WithDefaults(d); c.OnReject(nil) == nil {
		t.Fatal("WithDefaults replaced a set OnReject")
	}
}

func TestWithDefaults(t *testing.T) {
	if cfg := (Config[any, any]{}).WithDefaults(testDefaults); cfg.WindowMin != 10 || cfg.WindowMax != 1000 || cfg.Interval != 15*time.Second ||
		cfg.Timeout != 0 || cfg.RetryAfter != time.Second || cfg.Name != "default" || cfg.Registerer != nil || cfg.Context != nil {
		t.Fatalf("defaults %+v", cfg)
	}
	if c := (Config[any, any]{WindowMax: 4}).WithDefaults(testDefaults); c.WindowMin != 4 {
		t.Errorf("WindowMax 4 alone: WindowMin %d, want 4", c.WindowMin)
	}
	if c := (Config[any, any]{WindowMin: 5000}).WithDefaults(testDefaults); c.WindowMax != 5000 {
		t.Errorf("WindowMin 5000 alone: WindowMax %d, want 5000", c.WindowMax)
	}
	sigs := triggersOf((Config[any, any]{
		PrometheusURL: "http://p:9090",
		Queries:       []string{"a > 1"},
		Triggers:      []Trigger{{Query: "b > 1", Interval: 2 * time.Second}, {Name: "queue", Func: func(context.Context) (bool, error) { return false, nil }}},
	}).WithDefaults(testDefaults))
	want := []struct {
		name              string
		interval, timeout time.Duration
	}{{"query_0", 15 * time.Second, 5 * time.Second}, {"trigger_0", 2 * time.Second, 2 * time.Second}, {"queue", 15 * time.Second, 5 * time.Second}}
	for i, w := range want {
		if sigs[i].Name != w.name || sigs[i].Interval != w.interval || sigs[i].Timeout != w.timeout {
			t.Errorf("trigger %d: %s every %v, timeout %v; want %s, %v, %v", i, sigs[i].Name, sigs[i].Interval, sigs[i].Timeout, w.name, w.interval, w.timeout)
		}
	}
	if got := staleness(Config[any, any]{}, sigs[1]); got != 8*time.Second {
		t.Errorf("default staleness for a 2s trigger: %v, want 8s", got)
	}
	// A trigger without a timeout takes the defaults' Timeout as its cap, DefaultTimeout without WithDefaults.
	short := testDefaults
	short.Timeout = 2 * time.Second
	bare := []Trigger{{Name: "bare", Func: func(context.Context) (bool, error) { return false, nil }}}
	if got := triggersOf((Config[any, any]{Triggers: bare}).WithDefaults(short))[0].Timeout; got != 2*time.Second {
		t.Errorf("timeout under a 2s default: %v, want 2s", got)
	}
	if got := triggersOf(Config[any, any]{Interval: time.Minute, Triggers: bare})[0].Timeout; got != DefaultTimeout {
		t.Errorf("timeout without WithDefaults: %v, want DefaultTimeout", got)
	}
}
