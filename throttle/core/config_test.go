package core

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestValidatePanicsNamingTheField(t *testing.T) {
	fn := func(context.Context) (bool, error) { return false, nil }
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"min < 1", Config{WindowMin: -1}, "Config.WindowMin"},
		{"min > max", Config{WindowMin: 20, WindowMax: 10}, "Config.WindowMax must be >= Config.WindowMin"},
		{"max too large", Config{WindowMax: MaxWindow + 1}, "Config.WindowMax must be <="},
		{"empty query", Config{PrometheusURL: "http://127.0.0.1:9090", Queries: []string{"up", " "}}, "Config.Queries[1]"},
		{"unparsable URL", Config{PrometheusURL: "http://[::1", Queries: []string{"up"}}, "Config.PrometheusURL"},
		{"URL without scheme", Config{PrometheusURL: "127.0.0.1:9090", Queries: []string{"up"}}, "Config.PrometheusURL"},
		{"queries without URL", Config{Queries: []string{"up"}}, "Config.PrometheusURL must be set"},
		{"trigger query without URL", Config{Triggers: []Trigger{{Query: "up"}}}, "Config.PrometheusURL must be set when Config.Triggers[0].Query"},
		{"trigger with neither", Config{Triggers: []Trigger{{Func: fn}, {Name: "x"}}}, "Config.Triggers[1].Query"},
		{"trigger with both", Config{PrometheusURL: "http://p:9090", Triggers: []Trigger{{Query: "up", Func: fn}}}, "Config.Triggers[0] must set only one"},
		{"duplicate names", Config{Triggers: []Trigger{{Name: "q", Func: fn}, {Name: "q", Func: fn}}}, "Config.Triggers[1].Name must be unique, \"q\" is used twice"},
		{"a name used by default", Config{Triggers: []Trigger{{Func: fn}, {Name: "trigger_0", Func: fn}}}, "Config.Triggers[1].Name must be unique"},
		{"a query's name", Config{PrometheusURL: "http://p:9090", Queries: []string{"up"}, Triggers: []Trigger{{Name: "query_0", Func: fn}}}, "Config.Triggers[0].Name must be unique"},
		{"negative interval", Config{Interval: -time.Second}, "Config.Interval"},
		{"negative timeout", Config{Timeout: -time.Second}, "Config.Timeout"},
		{"negative staleness", Config{Staleness: -time.Second}, "Config.Staleness"},
		{"trigger interval", Config{Triggers: []Trigger{{Func: fn, Interval: -1}}}, "Config.Triggers[0].Interval"},
		{"trigger timeout", Config{Triggers: []Trigger{{Func: fn, Timeout: -1}}}, "Config.Triggers[0].Timeout"},
		{"fail mode", Config{FailMode: 7}, "Config.FailMode"},
		{"name breaking the header", Config{Name: "api\r\nSet-Cookie: x"}, "Config.Name must not contain control characters"},
	}
	for _, tt := range tests {
		for name, f := range map[string]func(Config){
			"Validate":  func(c Config) { c.Validate() },
			"NewEngine": func(c Config) { _ = NewEngine(c) },
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
	Config{WindowMin: 1, WindowMax: 1}.Validate()
}

func TestWithDefaults(t *testing.T) {
	if cfg := (Config{}).WithDefaults(testDefaults); cfg.WindowMin != 10 || cfg.WindowMax != 1000 || cfg.Interval != 15*time.Second ||
		cfg.Timeout != 0 || cfg.RetryAfter != time.Second || cfg.Name != "default" || cfg.Registerer != nil || cfg.Context != nil {
		t.Fatalf("defaults %+v", cfg)
	}
	if c := (Config{WindowMax: 4}).WithDefaults(testDefaults); c.WindowMin != 4 {
		t.Errorf("WindowMax 4 alone: WindowMin %d, want 4", c.WindowMin)
	}
	if c := (Config{WindowMin: 5000}).WithDefaults(testDefaults); c.WindowMax != 5000 {
		t.Errorf("WindowMin 5000 alone: WindowMax %d, want 5000", c.WindowMax)
	}
	sigs := triggersOf((Config{
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
	if got := staleness(Config{}, sigs[1]); got != 8*time.Second {
		t.Errorf("default staleness for a 2s trigger: %v, want 8s", got)
	}
	// A trigger without a timeout takes the defaults' Timeout as its cap, DefaultTimeout without WithDefaults.
	short := testDefaults
	short.Timeout = 2 * time.Second
	bare := []Trigger{{Name: "bare", Func: func(context.Context) (bool, error) { return false, nil }}}
	if got := triggersOf((Config{Triggers: bare}).WithDefaults(short))[0].Timeout; got != 2*time.Second {
		t.Errorf("timeout under a 2s default: %v, want 2s", got)
	}
	if got := triggersOf(Config{Interval: time.Minute, Triggers: bare})[0].Timeout; got != DefaultTimeout {
		t.Errorf("timeout without WithDefaults: %v, want DefaultTimeout", got)
	}
}
