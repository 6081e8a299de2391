package throttle

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestNewPanicsOnBadConfig(t *testing.T) {
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
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.HasPrefix(msg, "throttle: Config.") || !strings.Contains(msg, " must ") || !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %v, want a message naming %q", r, tt.want)
				}
			}()
			cfg := tt.cfg
			cfg.DisableMetrics = true
			New(cfg)
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, cfg := range []Config{configDefault(), configDefault(Config{})} {
		if cfg.WindowMin != 10 || cfg.WindowMax != 1000 || cfg.Interval != 15*time.Second || cfg.RetryAfter != time.Second ||
			cfg.Name != "default" || cfg.OnReject == nil || cfg.Registerer != nil || cfg.Context != nil {
			t.Fatalf("defaults %+v", cfg)
		}
	}
	if c := configDefault(Config{WindowMax: 4}); c.WindowMin != 4 {
		t.Errorf("WindowMax 4 alone: WindowMin %d, want 4", c.WindowMin)
	}
	if c := configDefault(Config{WindowMin: 5000}); c.WindowMax != 5000 {
		t.Errorf("WindowMin 5000 alone: WindowMax %d, want 5000", c.WindowMax)
	}
	sigs := triggersOf(configDefault(Config{
		PrometheusURL: "http://p:9090",
		Queries:       []string{"a > 1"},
		Triggers:      []Trigger{{Query: "b > 1", Interval: 2 * time.Second}, {Name: "queue", Func: func(context.Context) (bool, error) { return false, nil }}},
	}))
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
}
