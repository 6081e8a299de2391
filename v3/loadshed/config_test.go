package loadshed

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/prometheus/client_golang/prometheus"
)

// The rules of the defaults and of validation are the core's (table-tested there); these tests check that the
// adapter hands the core every field and applies its rules.

func TestConfigGivesTheCoreEveryField(t *testing.T) {
	var cfg Config
	cv := reflect.ValueOf(&cfg).Elem()
	ct := reflect.TypeFor[core.Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Name == "Logger" { // the adapter's own: Fiber's log
			continue
		}
		v := cv.FieldByName(f.Name)
		if !v.IsValid() || v.Type() != f.Type {
			t.Fatalf("Config has no field %s of type %v", f.Name, f.Type)
		}
		switch f.Type {
		case reflect.TypeFor[float64]():
			v.SetFloat(float64(i) + 0.5)
		case reflect.TypeFor[time.Duration]():
			v.SetInt(int64(i) * int64(time.Second))
		case reflect.TypeFor[bool]():
			v.SetBool(true)
		case reflect.TypeFor[string]():
			v.SetString(fmt.Sprint("field", i))
		case reflect.TypeFor[core.Signal]():
			v.Set(reflect.ValueOf(coretest.NewFixedLoad(0)))
		case reflect.TypeFor[prometheus.Registerer]():
			v.Set(reflect.ValueOf(prometheus.NewRegistry()))
		case reflect.TypeFor[context.Context]():
			v.Set(reflect.ValueOf(context.Background()))
		default:
			t.Fatalf("no test value for core.Config.%s of type %v", f.Name, f.Type)
		}
	}
	got := reflect.ValueOf(cfg.core())
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Name == "Logger" {
			if got.Field(i).IsNil() {
				t.Error("core.Config.Logger not set")
			}
			continue
		}
		if want := cv.FieldByName(f.Name).Interface(); got.Field(i).Interface() != want {
			t.Errorf("core.Config.%s = %v, want Config.%s = %v", f.Name, got.Field(i).Interface(), f.Name, want)
		}
	}
}

func TestConfigDefault(t *testing.T) {
	cfg := configDefault(Config{})
	if cfg.OnReject == nil {
		t.Fatal("configDefault left OnReject nil")
	}
	cfg.OnReject, cfg.Next = nil, nil
	want := ConfigDefault
	want.OnReject = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("configDefault(Config{}) = %+v, want ConfigDefault %+v", cfg, want)
	}
	// The critical band follows a custom Upper (the core's rule).
	if cfg := configDefault(Config{Lower: 0.95, Upper: 1.0}); cfg.CriticalLower != 1.0 || cfg.CriticalUpper != 1.05 {
		t.Fatalf("Upper 1.0: critical band [%v, %v], want [1, 1.05]", cfg.CriticalLower, cfg.CriticalUpper)
	}
}

func TestConfigPanicsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		field string
		cfg   Config
	}{
		{"Config.Upper", Config{Lower: 0.9, Upper: 0.8}},
		{"Config.Name", Config{Name: "api\r\nX-Injected: 1"}},
	} {
		func() {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "loadshed: "+tt.field+" must ") {
					t.Errorf("config %+v: panic %v, want one naming %s", tt.cfg, r, tt.field)
				}
			}()
			tt.cfg.Signal = coretest.NewFixedLoad(0)
			tt.cfg.DisableMetrics = true
			_ = NewShedder(tt.cfg)
		}()
	}
}
