package core

import (
	"strings"
	"testing"
	"time"
)

func TestNewPanicsNamingTheField(t *testing.T) {
	tests := []struct {
		cfg   config
		field string
	}{
		{config{}, "Config.Servers"},
		{config{Servers: []string{"ftp://127.0.0.1:1"}}, "Config.Servers"},
		{config{Servers: []string{"http://127.0.0.1:1/path"}}, "Config.Servers"},
		{config{Servers: []string{"http://:80"}}, "Config.Servers"},
		{config{Servers: []string{"http://[::1"}}, "Config.Servers"},
		{config{Servers: []string{"127.0.0.1:1", "127.0.0.1:1"}}, "Config.Servers"},
		{config{Servers: []string{"127.0.0.1:1"}, Mode: Mode(7)}, "Config.Mode"},
		{config{Servers: []string{"127.0.0.1:1"}, Mode: Mode(-1)}, "Config.Mode"},
		{config{Servers: []string{"127.0.0.1:1"}, HealthInterval: -time.Second}, "Config.HealthInterval"},
		{config{Servers: []string{"127.0.0.1:1"}, HealthInterval: time.Second, HealthTimeout: time.Second}, "Config.HealthTimeout"},
		{config{Servers: []string{"127.0.0.1:1"}, HealthTimeout: 2 * time.Second}, "Config.HealthTimeout"},
		{config{Servers: []string{"127.0.0.1:1"}, DrainTimeout: -1}, "Config.DrainTimeout"},
		{config{Servers: []string{"127.0.0.1:1"}, Timeout: -1}, "Config.Timeout"},
		{config{Servers: []string{"127.0.0.1:1"}, Name: "a\r\nSet-Cookie: x"}, "Config.Name"},
		{config{Servers: []string{"127.0.0.1:1"}, Name: "del\x7f"}, "Config.Name"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "upstreampick: "+tt.field) {
					t.Fatalf("panic %v, want a message naming %s", r, tt.field)
				}
			}()
			tt.cfg.Dial = refuse
			_ = newEngine(tt.cfg).Close()
		})
	}
}

func TestWithDefaults(t *testing.T) {
	def := config{HealthInterval: 4 * time.Second, DrainTimeout: time.Minute, Timeout: 3 * time.Second, Retries: 5,
		RetryAfter: 7 * time.Second, Name: "def"}
	got := config{Servers: []string{"127.0.0.1:1"}}.WithDefaults(def)
	want := config{Servers: []string{"127.0.0.1:1"}, HealthInterval: 4 * time.Second, HealthTimeout: 2 * time.Second,
		DrainTimeout: time.Minute, Timeout: 3 * time.Second, Retries: 5, RetryAfter: 7 * time.Second, Name: "def"}
	if got.HealthInterval != want.HealthInterval || got.HealthTimeout != want.HealthTimeout ||
		got.DrainTimeout != want.DrainTimeout || got.Timeout != want.Timeout || got.Retries != want.Retries ||
		got.RetryAfter != want.RetryAfter || got.Name != want.Name || len(got.Servers) != 1 {
		t.Fatalf("WithDefaults of a zero config = %+v, want %+v", got, want)
	}

	// Set fields are kept; HealthTimeout follows the config's own interval; a negative Retries disables them.
	set := config{Mode: ModeRandom, HealthInterval: 100 * time.Millisecond, DrainTimeout: time.Second,
		Timeout: time.Second, Retries: -1, RetryAfter: -1, Name: "mine"}.WithDefaults(def)
	if set.Mode != ModeRandom || set.HealthInterval != 100*time.Millisecond || set.HealthTimeout != 50*time.Millisecond ||
		set.DrainTimeout != time.Second || set.Timeout != time.Second || set.Retries != 0 || set.RetryAfter != -1 ||
		set.Name != "mine" {
		t.Fatalf("WithDefaults kept %+v", set)
	}
	if again := (config{Retries: 1}).WithDefaults(def); again.Retries != 1 {
		t.Fatalf("Retries 1 became %d", again.Retries)
	}
}
