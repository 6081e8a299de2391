package rebalance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConfigDefault(t *testing.T) {
	cfg := configDefault(Config{PrometheusURL: "http://127.0.0.1:9090"})
	if cfg.Query != DefaultQuery || cfg.Interval != time.Second || cfg.Threshold != 0.2 || cfg.Target != 0 ||
		cfg.ShedRate != 0.005 || cfg.MinConnections != 50 || cfg.MaxAge != 3*time.Second ||
		cfg.Window != 5*time.Second || cfg.Registerer != prometheus.DefaultRegisterer || cfg.Context == nil {
		t.Fatalf("defaults not filled: %+v", cfg)
	}
	cfg = configDefault(Config{PrometheusURL: "http://p:9090", Interval: 2 * time.Second})
	if cfg.MaxAge != 6*time.Second {
		t.Fatalf("MaxAge follows Interval: got %v, want 6s", cfg.MaxAge)
	}
	cfg.validate() // a filled config with a URL is valid
}

func TestConfigPanicsNamingTheField(t *testing.T) {
	src := func(context.Context) (Reading, error) { return Reading{}, nil }
	tests := []struct {
		field string
		cfg   Config
	}{
		{"Config.PrometheusURL or Config.Source", Config{}},
		{"Config.PrometheusURL", Config{PrometheusURL: "prometheus:9090"}},
		{"Config.PrometheusURL", Config{PrometheusURL: "ftp://prometheus:9090"}},
		{"Config.PrometheusURL", Config{PrometheusURL: "http://"}},
		{"Config.Interval", Config{Source: src, Interval: -time.Second}},
		{"Config.Threshold", Config{Source: src, Threshold: -0.1}},
		{"Config.Target", Config{Source: src, Target: 0.3}},
		{"Config.Target", Config{Source: src, Target: -0.1}},
		{"Config.ShedRate", Config{Source: src, ShedRate: 1.5}},
		{"Config.ShedRate", Config{Source: src, ShedRate: -0.5}},
		{"Config.MaxAge", Config{Source: src, MaxAge: -time.Second}},
		{"Config.Window", Config{Source: src, Window: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "rebalance: "+tt.field) {
					t.Fatalf("panic %q, want one naming %s", msg, tt.field)
				}
			}()
			New(tt.cfg)
		})
	}
}
