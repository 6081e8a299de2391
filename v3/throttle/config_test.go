package throttle

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/fiberguard/fiberguard/throttle/core/coretest"
)

// TestNewPanicsOnBadConfig: New validates the config it is given, with the core's messages (the core's tests
// hold the full table).
func TestNewPanicsOnBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"min > max", Config{WindowMin: 20, WindowMax: 10}, "Config.WindowMax must be >= Config.WindowMin"},
		{"queries without URL", Config{Queries: []string{"up"}}, "Config.PrometheusURL must be set"},
		{"trigger with neither", Config{Triggers: []Trigger{{Name: "x"}}}, "Config.Triggers[0].Query"},
		{"negative timeout", Config{Timeout: -time.Second}, "Config.Timeout"},
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

// The rules of the defaults and of validation are the core's (table-tested there); these tests check that the
// adapter applies them and hands the core every field.

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
}

func TestConfigGivesTheCoreEveryField(t *testing.T) {
	var cfg Config
	coretest.FillLike(t, &cfg, reflect.TypeFor[core.Config]())
	coretest.SameFields(t, cfg, cfg.core())
}
