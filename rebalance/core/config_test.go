package core

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestWithDefaults(t *testing.T) {
	cfg := Config[any, any]{PrometheusURL: "http://127.0.0.1:9090"}.WithDefaults(Defaults[any, any]())
	if cfg.Query != DefaultQuery || cfg.Interval != time.Second || cfg.Threshold != 0.2 || cfg.Target != 0 ||
		cfg.ShedRate != 0.005 || cfg.MinConnections != 50 || cfg.MaxAge != 3*time.Second ||
		cfg.Window != 5*time.Second || cfg.Name != "default" || cfg.Registerer != prometheus.DefaultRegisterer ||
		cfg.Context != nil || cfg.RoundTripper != nil {
		t.Fatalf("defaults not filled: %+v", cfg)
	}
	cfg = Config[any, any]{PrometheusURL: "http://p:9090", Interval: 2 * time.Second}.WithDefaults(Defaults[any, any]())
	if cfg.MaxAge != 6*time.Second {
		t.Fatalf("MaxAge follows Interval: got %v, want 6s", cfg.MaxAge)
	}
	cfg.Validate() // a filled config with a URL is valid
	if cfg.TimestampQuery != DefaultTimestampQuery {
		t.Fatalf("TimestampQuery = %q, want the default beside the default Query", cfg.TimestampQuery)
	}
	cfg = Config[any, any]{PrometheusURL: "http://p:9090", Query: DefaultQuery}.WithDefaults(Defaults[any, any]())
	if cfg.TimestampQuery != DefaultTimestampQuery {
		t.Fatalf("TimestampQuery = %q, want the default beside an explicit DefaultQuery", cfg.TimestampQuery)
	}
	if cfg = (Config[any, any]{PrometheusURL: "http://p:9090", Query: "x"}).WithDefaults(Defaults[any, any]()); cfg.TimestampQuery != "" {
		t.Fatalf("TimestampQuery = %q beside a custom Query, want none guessed", cfg.TimestampQuery)
	}
}

// TestWithDefaultsTakesTheGivenDefaults: the zero fields come from the defaults passed in (an adapter's
// ConfigDefault, which its user may change), not from Defaults[any, any](); given fields are kept.
func TestWithDefaultsTakesTheGivenDefaults(t *testing.T) {
	def := Config[any, any]{Query: "q", Interval: 2 * time.Second, Threshold: 0.5, ShedRate: 0.1, MinConnections: 7,
		Window: 9 * time.Second, Name: "site"}
	cfg := Config[any, any]{Cluster: fixed(1, 1)}.WithDefaults(def)
	if cfg.Query != "q" || cfg.TimestampQuery != "" || cfg.Interval != 2*time.Second || cfg.Threshold != 0.5 ||
		cfg.ShedRate != 0.1 || cfg.MinConnections != 7 || cfg.MaxAge != 6*time.Second || cfg.Window != 9*time.Second ||
		cfg.Name != "site" {
		t.Fatalf("filled %+v, want every zero field from the given defaults", cfg)
	}
	ctx := context.Background()
	given := Config[any, any]{Cluster: fixed(1, 1), Name: "api", Context: ctx, Interval: 3 * time.Second, MaxAge: time.Second}
	if cfg := given.WithDefaults(def); cfg.Name != "api" || cfg.Context != ctx || cfg.Interval != 3*time.Second ||
		cfg.MaxAge != time.Second {
		t.Fatalf("WithDefaults replaced a given field: %+v", cfg)
	}
}

// TestConfigBoundsAccepted: the edges of every bounded field are valid.
func TestConfigBoundsAccepted(t *testing.T) {
	src := fixed(0, 0)
	for _, cfg := range []Config[any, any]{
		{Cluster: src, Interval: 100 * time.Millisecond, MaxAge: 100 * time.Millisecond},
		{Cluster: src, Interval: 10 * time.Minute},
		{Cluster: src, Interval: time.Second, Window: 1000 * time.Second},
		{Cluster: src, Interval: time.Second, Window: time.Millisecond}, // below one interval: the current count alone
		{Cluster: src, MinConnections: -1},                              // no floor
		{Cluster: src, Name: "api-eu/1 ✓"},
		{Cluster: src, ShedRate: 1, Threshold: 1e9, Target: 1e9},
		{PrometheusURL: "http://p:9090", Query: "x", TimestampQuery: "timestamp(x)"},
	} {
		cfg.WithDefaults(Defaults[any, any]()).Validate()
	}
}

func TestConfigPanicsNamingTheField(t *testing.T) {
	src := fixed(0, 0)
	tests := []struct {
		field string
		cfg   Config[any, any]
	}{
		{"Config.PrometheusURL or Config.Cluster", Config[any, any]{}},
		{"Config.PrometheusURL", Config[any, any]{PrometheusURL: "prometheus:9090"}},
		{"Config.PrometheusURL", Config[any, any]{PrometheusURL: "ftp://prometheus:9090"}},
		{"Config.PrometheusURL", Config[any, any]{PrometheusURL: "http://"}},
		{"Config.TimestampQuery", Config[any, any]{PrometheusURL: "http://p:9090", Query: "x"}},
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: -time.Second}},
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: 1}}, // 1 ns, meant as 1 s
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: time.Microsecond}},
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: time.Millisecond}},
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: 99 * time.Millisecond}},
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: 11 * time.Minute}},
		{"Config.Interval", Config[any, any]{Cluster: src, Interval: math.MaxInt64}}, // 3 * Interval would overflow
		{"Config.Threshold", Config[any, any]{Cluster: src, Threshold: -0.1}},
		{"Config.Threshold", Config[any, any]{Cluster: src, Threshold: math.NaN()}},
		{"Config.Threshold", Config[any, any]{Cluster: src, Threshold: math.Inf(1)}},
		{"Config.Target", Config[any, any]{Cluster: src, Target: 0.3}},
		{"Config.Target", Config[any, any]{Cluster: src, Target: -0.1}},
		{"Config.Target", Config[any, any]{Cluster: src, Target: math.NaN()}},
		{"Config.ShedRate", Config[any, any]{Cluster: src, ShedRate: 1.5}},
		{"Config.ShedRate", Config[any, any]{Cluster: src, ShedRate: -0.5}},
		{"Config.ShedRate", Config[any, any]{Cluster: src, ShedRate: math.NaN()}},
		{"Config.ShedRate", Config[any, any]{Cluster: src, ShedRate: math.Inf(1)}},
		{"Config.MaxAge", Config[any, any]{Cluster: src, MaxAge: -time.Second}},
		{"Config.MaxAge", Config[any, any]{Cluster: src, MaxAge: time.Millisecond}},
		{"Config.MaxAge", Config[any, any]{Cluster: src, MaxAge: 1}},
		{"Config.Window", Config[any, any]{Cluster: src, Window: -time.Second}},
		{"Config.Window", Config[any, any]{Cluster: src, Window: 1001 * time.Second}}, // over 1000 intervals of 1 s
		{"Config.Window", Config[any, any]{Cluster: src, Window: math.MaxInt64}},
		{"Config.Name", Config[any, any]{Cluster: src, Name: "api\xff"}}, // not a label value
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			tt.cfg.DisableMetrics = true // a config that passes by mistake must not clash on the default registry
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "rebalance: "+tt.field) {
					t.Fatalf("panic %q, want one naming %s", msg, tt.field)
				}
			}()
			e := NewEngine(tt.cfg.WithDefaults(Defaults[any, any]()), nil)
			e.Close() // reached only when the config was accepted
		})
	}
}

// TestDefaultsHoldValuesOnly: no registry, context, client, app or other live object in the defaults, and
// WithDefaults leaves the live fields as given.
func TestDefaultsHoldValuesOnly(t *testing.T) {
	d := Defaults[any, any]()
	if d.Registerer != nil || d.Context != nil || d.RoundTripper != nil || d.Cluster != nil || d.App != nil ||
		d.Connections != nil || d.Next != nil {
		t.Fatalf("Defaults holds a live object: %+v", d)
	}
	d.App, d.Cluster, d.Context = "app", fixed(1, 1), context.Background()
	d.Connections = func() int { return 1 }
	if cfg := (Config[any, any]{}).WithDefaults(d); cfg.App != nil || cfg.Cluster != nil || cfg.Context != nil ||
		cfg.Connections != nil {
		t.Fatalf("WithDefaults handed a live object of the defaults to the config: %+v", cfg)
	}
}

// TestWithDefaultsFillsNext: Next, the one framework-typed field with a default, comes from the given defaults
// unless set.
func TestWithDefaultsFillsNext(t *testing.T) {
	skip := func(any) bool { return true }
	d := Defaults[any, any]()
	d.Next = skip
	if cfg := (Config[any, any]{}).WithDefaults(d); cfg.Next == nil || !cfg.Next(nil) {
		t.Fatal("Next not taken from the defaults")
	}
	own := func(any) bool { return false }
	if cfg := (Config[any, any]{Next: own}).WithDefaults(d); cfg.Next == nil || cfg.Next(nil) {
		t.Fatal("a given Next was replaced")
	}
}
