package rebalance

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/gofiber/fiber/v3"
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

// TestConfigDefaultIsTheCoreDefaults: the defaults written out here for the reader are the core's.
func TestConfigDefaultIsTheCoreDefaults(t *testing.T) {
	if got := ConfigDefault.engineConfig(); !reflect.DeepEqual(got, core.Defaults) {
		t.Fatalf("ConfigDefault's core fields %+v, want core.Defaults %+v", got, core.Defaults)
	}
}

// TestEngineConfigCarriesEveryField: every field but the Fiber-typed ones reaches the core, and comes back
// filled.
func TestEngineConfigCarriesEveryField(t *testing.T) {
	ctx := context.Background()
	src := fixed(1, 2)
	conns := func() int { return 3 }
	cfg := Config{
		Next: func(fiber.Ctx) bool { return false }, App: fiber.New(),
		PrometheusURL: "http://p:9090", Query: "q", TimestampQuery: "tq", Cluster: src, Connections: conns,
		Interval: 2 * time.Second, Threshold: 0.3, Target: 0.1, ShedRate: 0.2, MinConnections: 7,
		MaxAge: 9 * time.Second, Window: 11 * time.Second, RoundTripper: &http.Transport{}, Name: "api",
		Registerer: prometheus.NewRegistry(), DisableMetrics: true, Context: ctx,
	}
	v := reflect.ValueOf(cfg)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("set Config.%s in this test", v.Type().Field(i).Name)
		}
	}
	ec := reflect.ValueOf(cfg.engineConfig())
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Next" || name == "App" {
			continue
		}
		if !same(ec.FieldByName(name), v.Field(i)) {
			t.Fatalf("core Config.%s = %v, want %v", name, ec.FieldByName(name), v.Field(i))
		}
	}
	var back Config
	back.setEngineConfig(cfg.engineConfig())
	b := reflect.ValueOf(back)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "Next" && name != "App" && !same(b.Field(i), v.Field(i)) {
			t.Fatalf("Config.%s = %v after a round trip through the core, want %v", name, b.Field(i), v.Field(i))
		}
	}
}

// same compares two fields, funcs by their code pointer.
func same(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return false
	}
	if a.Kind() == reflect.Func {
		return b.Kind() == reflect.Func && a.Pointer() == b.Pointer()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// TestConfigPanicsNamingTheField: NewRebalancer validates with the core's messages (the core's tests hold the
// full table).
func TestConfigPanicsNamingTheField(t *testing.T) {
	tests := []struct {
		field string
		cfg   Config
	}{
		{"Config.PrometheusURL or Config.Cluster", Config{}},
		{"Config.PrometheusURL", Config{PrometheusURL: "prometheus:9090"}},
		{"Config.TimestampQuery", Config{PrometheusURL: "http://p:9090", Query: "x"}},
		{"Config.Interval", Config{Cluster: fixed(1, 1), Interval: 1}}, // 1 ns, meant as 1 s
		{"Config.Target", Config{Cluster: fixed(1, 1), Target: 0.3}},
		{"Config.Window", Config{Cluster: fixed(1, 1), Window: -time.Second}},
		{"Config.Name", Config{Cluster: fixed(1, 1), Name: "api\xff"}},
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
