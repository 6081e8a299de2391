package upstreampick

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// refuse is a Config.Dial that refuses every connection, for tests that dial nothing on purpose.
func refuse(context.Context, string) (net.Conn, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

func TestNewPickerPanicsNamingTheField(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
	}{
		{Config{}, "Config.Servers"},
		{Config{Servers: []string{"ftp://127.0.0.1:1"}}, "Config.Servers"},
		{Config{Servers: []string{"http://127.0.0.1:1/path"}}, "Config.Servers"},
		{Config{Servers: []string{"http://:80"}}, "Config.Servers"},
		{Config{Servers: []string{"http://[::1"}}, "Config.Servers"},
		{Config{Servers: []string{"127.0.0.1:1", "127.0.0.1:1"}}, "Config.Servers"},
		{Config{Servers: []string{"127.0.0.1:1"}, Mode: Mode(7)}, "Config.Mode"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: -time.Second}, "Config.HealthInterval"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: time.Second, HealthTimeout: time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthTimeout: 2 * time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, DrainTimeout: -1}, "Config.DrainTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Timeout: -1}, "Config.Timeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Name: "a\r\nSet-Cookie: x"}, "Config.Name"},
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
		cfg.LookupHost != nil, cfg.Dial != nil, cfg.Registerer != nil, cfg.Context != nil:
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
	code, body := get(app.Handler(), "/")
	if code != fiber.StatusServiceUnavailable || body != "upstreampick: no upstream available\n" {
		t.Fatalf("default OnReject: %d %q", code, body)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{time.Second + 1, "2"},
		{1500 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{time.Hour, "3600"},
		{-1, ""},
	} {
		if got := string(retryAfterHeader(tt.d)); got != tt.want {
			t.Errorf("retryAfterHeader(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
