package rebalance

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConfigDefault(t *testing.T) {
	cfg := configDefault(Config{PrometheusURL: "http://127.0.0.1:9090"})
	if cfg.Query != DefaultQuery || cfg.Interval != time.Second || cfg.Threshold != 0.2 || cfg.Target != 0 ||
		cfg.ShedRate != 0.005 || cfg.MinConnections != 50 || cfg.MaxAge != 3*time.Second ||
		cfg.Window != 5*time.Second || cfg.Name != "default" || cfg.Registerer != prometheus.DefaultRegisterer ||
		cfg.Context != nil || cfg.RoundTripper != nil {
		t.Fatalf("defaults not filled: %+v", cfg)
	}
	cfg = configDefault(Config{PrometheusURL: "http://p:9090", Interval: 2 * time.Second})
	if cfg.MaxAge != 6*time.Second {
		t.Fatalf("MaxAge follows Interval: got %v, want 6s", cfg.MaxAge)
	}
	cfg.validate() // a filled config with a URL is valid
	if cfg.TimestampQuery != DefaultTimestampQuery {
		t.Fatalf("TimestampQuery = %q, want the default beside the default Query", cfg.TimestampQuery)
	}
	cfg = configDefault(Config{PrometheusURL: "http://p:9090", Query: DefaultQuery})
	if cfg.TimestampQuery != DefaultTimestampQuery {
		t.Fatalf("TimestampQuery = %q, want the default beside an explicit DefaultQuery", cfg.TimestampQuery)
	}
	if cfg = configDefault(Config{PrometheusURL: "http://p:9090", Query: "x"}); cfg.TimestampQuery != "" {
		t.Fatalf("TimestampQuery = %q beside a custom Query, want none guessed", cfg.TimestampQuery)
	}
}

// TestConfigDefaultHoldsValuesOnly: no registry, context, client or other live object in ConfigDefault, and a
// config given without them keeps nil where configDefault does not resolve it.
func TestConfigDefaultHoldsValuesOnly(t *testing.T) {
	d := ConfigDefault
	if d.Registerer != nil || d.Context != nil || d.RoundTripper != nil || d.Cluster != nil || d.App != nil ||
		d.Connections != nil || d.Next != nil {
		t.Fatalf("ConfigDefault holds a live object: %+v", d)
	}
	if d.Name != "default" {
		t.Fatalf("ConfigDefault.Name = %q, want default", d.Name)
	}
	ctx := context.Background()
	cfg := configDefault(Config{PrometheusURL: "http://p:9090", Name: "api", Context: ctx})
	if cfg.Name != "api" || cfg.Context != ctx {
		t.Fatalf("configDefault replaced a given field: Name %q, Context %v", cfg.Name, cfg.Context)
	}
}

// TestConfigBoundsAccepted: the edges of every bounded field are valid.
func TestConfigBoundsAccepted(t *testing.T) {
	src := func(context.Context) (Cluster, error) { return Cluster{}, nil }
	for _, cfg := range []Config{
		{Cluster: src, Interval: 100 * time.Millisecond, MaxAge: 100 * time.Millisecond},
		{Cluster: src, Interval: 10 * time.Minute},
		{Cluster: src, Interval: time.Second, Window: 1000 * time.Second},
		{Cluster: src, Interval: time.Second, Window: time.Millisecond}, // below one interval: the current count alone
		{Cluster: src, MinConnections: -1},                              // no floor
		{Cluster: src, Name: "api-eu/1 ✓"},
		{Cluster: src, ShedRate: 1, Threshold: 1e9, Target: 1e9},
		{PrometheusURL: "http://p:9090", Query: "x", TimestampQuery: "timestamp(x)"},
	} {
		configDefault(cfg).validate()
	}
}

func TestConfigPanicsNamingTheField(t *testing.T) {
	src := func(context.Context) (Cluster, error) { return Cluster{}, nil }
	tests := []struct {
		field string
		cfg   Config
	}{
		{"Config.PrometheusURL or Config.Cluster", Config{}},
		{"Config.PrometheusURL", Config{PrometheusURL: "prometheus:9090"}},
		{"Config.PrometheusURL", Config{PrometheusURL: "ftp://prometheus:9090"}},
		{"Config.PrometheusURL", Config{PrometheusURL: "http://"}},
		{"Config.TimestampQuery", Config{PrometheusURL: "http://p:9090", Query: "x"}},
		{"Config.Interval", Config{Cluster: src, Interval: -time.Second}},
		{"Config.Interval", Config{Cluster: src, Interval: 1}}, // 1 ns, meant as 1 s
		{"Config.Interval", Config{Cluster: src, Interval: time.Microsecond}},
		{"Config.Interval", Config{Cluster: src, Interval: time.Millisecond}},
		{"Config.Interval", Config{Cluster: src, Interval: 99 * time.Millisecond}},
		{"Config.Interval", Config{Cluster: src, Interval: 11 * time.Minute}},
		{"Config.Interval", Config{Cluster: src, Interval: math.MaxInt64}}, // 3 * Interval would overflow
		{"Config.Threshold", Config{Cluster: src, Threshold: -0.1}},
		{"Config.Threshold", Config{Cluster: src, Threshold: math.NaN()}},
		{"Config.Threshold", Config{Cluster: src, Threshold: math.Inf(1)}},
		{"Config.Target", Config{Cluster: src, Target: 0.3}},
		{"Config.Target", Config{Cluster: src, Target: -0.1}},
		{"Config.Target", Config{Cluster: src, Target: math.NaN()}},
		{"Config.ShedRate", Config{Cluster: src, ShedRate: 1.5}},
		{"Config.ShedRate", Config{Cluster: src, ShedRate: -0.5}},
		{"Config.ShedRate", Config{Cluster: src, ShedRate: math.NaN()}},
		{"Config.ShedRate", Config{Cluster: src, ShedRate: math.Inf(1)}},
		{"Config.MaxAge", Config{Cluster: src, MaxAge: -time.Second}},
		{"Config.MaxAge", Config{Cluster: src, MaxAge: time.Millisecond}},
		{"Config.MaxAge", Config{Cluster: src, MaxAge: 1}},
		{"Config.Window", Config{Cluster: src, Window: -time.Second}},
		{"Config.Window", Config{Cluster: src, Window: 1001 * time.Second}}, // over 1000 intervals of 1 s
		{"Config.Window", Config{Cluster: src, Window: math.MaxInt64}},
		{"Config.Name", Config{Cluster: src, Name: "api\xff"}}, // not a label value
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
			r := NewRebalancer(tt.cfg)
			r.Close() // reached only when the config was accepted
		})
	}
}
