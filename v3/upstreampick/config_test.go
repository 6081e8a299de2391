package upstreampick

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
)

func TestNewPickerPanicsNamingTheField(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
	}{
		// One case per field: the core's tests hold the full table.
		{Config{}, "Config.Servers"},
		{Config{Servers: []string{"ftp://127.0.0.1:1"}}, "Config.Servers"},
		{Config{Servers: []string{"127.0.0.1:1"}, Mode: Mode(7)}, "Config.Mode"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: -time.Second}, "Config.HealthInterval"},
		// Longer than the default HealthInterval.
		{Config{Servers: []string{"127.0.0.1:1"}, HealthTimeout: 2 * time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, DrainTimeout: -1}, "Config.DrainTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Timeout: -1}, "Config.Timeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Name: "a\r\nSet-Cookie: x"}, "Config.Name"},
		{Config{Discover: []Discovery{DNS("api.test", 0)}}, "Config.Discover"},
	}
	for _, tt := range tests {
		for ctor, build := range map[string]func(Config){
			"NewPicker": func(cfg Config) { _ = NewPicker(cfg).Close() },
			"New":       func(cfg Config) { _ = New(cfg) },
		} {
			t.Run(ctor+"/"+tt.field, func(t *testing.T) {
				defer func() {
					r := recover()
					msg, _ := r.(string)
					if !strings.HasPrefix(msg, "upstreampick: "+tt.field) {
						t.Fatalf("panic %v, want a message naming %s", r, tt.field)
					}
				}()
				tt.cfg.Dial = refuse
				build(tt.cfg)
			})
		}
	}
}

func TestConfigDefault(t *testing.T) {
	cfg := configDefault(Config{Servers: []string{"127.0.0.1:1"}, Retries: -1})
	switch {
	case cfg.Mode != ModeLatency, cfg.HealthInterval != time.Second, cfg.HealthTimeout != 500*time.Millisecond,
		cfg.DrainTimeout != 30*time.Second, cfg.Timeout != time.Second, cfg.Retries != 0,
		cfg.OnReject == nil, cfg.RetryAfter != time.Second, cfg.Name != "default",
		// nil means the default, resolved where it is used.
		cfg.LookupHost != nil, cfg.Dial != nil, cfg.Registerer != nil, cfg.Context != nil,
		cfg.Discover != nil, cfg.Resolver != nil:
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	if cfg := configDefault(Config{Servers: []string{"127.0.0.1:1"}}); cfg.Retries != 2 {
		t.Fatalf("Retries default %d, want 2", cfg.Retries)
	}
	if cfg := configDefault(); cfg.Name != "default" || cfg.HealthInterval != time.Second || cfg.OnReject == nil {
		t.Fatalf("configDefault() = %+v, want ConfigDefault", cfg)
	}
}

func TestConfigDefaultOnReject(t *testing.T) {
	app := fiber.New()
	app.Use(ConfigDefault.OnReject)
	code, body := get(t, app, "/")
	if code != fiber.StatusServiceUnavailable || body != "upstreampick: no upstream available\n" {
		t.Fatalf("default OnReject: %d %q", code, body)
	}
}

// TestConfigMirrorsTheCore: every field of core.Config but the adapter's own (NoUpstream, Warnf) is a field of
// Config of the same type, and goes to the core and back unchanged, so a field added to the core cannot be
// forgotten here.
func TestConfigMirrorsTheCore(t *testing.T) {
	var cfg Config
	cv, ct := reflect.ValueOf(&cfg).Elem(), reflect.TypeFor[core.Config]()
	for f := range ct.Fields() {
		if f.Name == "NoUpstream" || f.Name == "Warnf" {
			continue
		}
		mine, ok := cv.Type().FieldByName(f.Name)
		if !ok || mine.Type != f.Type {
			t.Fatalf("core.Config.%s (%v) has no field of that type in Config", f.Name, f.Type)
		}
		// A distinct non-zero value per field.
		v := cv.FieldByIndex(mine.Index)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64:
			v.SetInt(int64(1 + mine.Index[0]))
		case reflect.String:
			v.SetString(f.Name)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case reflect.Func:
			v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { panic(f.Name) }))
		case reflect.Interface:
			switch f.Name {
			case "Registerer":
				v.Set(reflect.ValueOf(prometheus.NewRegistry()))
			case "Context":
				v.Set(reflect.ValueOf(context.Background()))
			case "Resolver":
				v.Set(reflect.ValueOf(&net.Resolver{}))
			default:
				t.Fatalf("no test value for core.Config.%s", f.Name)
			}
		default:
			t.Fatalf("no test value for core.Config.%s (%v)", f.Name, f.Type)
		}
	}
	c := cfg.coreConfig()
	if !errors.Is(c.NoUpstream, ErrNoUpstream) || c.Warnf == nil {
		t.Fatalf("coreConfig: NoUpstream %v, Warnf set %v; want ErrNoUpstream and Fiber's logger", c.NoUpstream, c.Warnf != nil)
	}
	var back Config
	back.setCore(c)
	bv := reflect.ValueOf(back)
	for f := range ct.Fields() {
		if f.Name == "NoUpstream" || f.Name == "Warnf" {
			continue
		}
		want, got := cv.FieldByName(f.Name), bv.FieldByName(f.Name)
		same := false
		switch want.Kind() {
		case reflect.Func, reflect.Slice:
			same = want.Pointer() == got.Pointer()
		default:
			same = want.Interface() == got.Interface()
		}
		if !same {
			t.Errorf("Config.%s did not go to the core and back", f.Name)
		}
	}
}
