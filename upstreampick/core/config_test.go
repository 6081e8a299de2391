package core

import (
	"strings"
	"testing"
	"time"
)

func TestNewPanicsNamingTheField(t *testing.T) {
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
		{Config{Servers: []string{"127.0.0.1:1"}, Mode: Mode(-1)}, "Config.Mode"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: -time.Second}, "Config.HealthInterval"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: time.Second, HealthTimeout: time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, HealthTimeout: 2 * time.Second}, "Config.HealthTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, DrainTimeout: -1}, "Config.DrainTimeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Timeout: -1}, "Config.Timeout"},
		{Config{Servers: []string{"127.0.0.1:1"}, Name: "a\r\nSet-Cookie: x"}, "Config.Name"},
		{Config{Servers: []string{"127.0.0.1:1"}, Name: "del\x7f"}, "Config.Name"},
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
			_ = newPicker(tt.cfg).Close()
		})
	}
}

func TestFill(t *testing.T) {
	def := Config{HealthInterval: 4 * time.Second, DrainTimeout: time.Minute, Timeout: 3 * time.Second, Retries: 5,
		RetryAfter: 7 * time.Second, Name: "def"}
	got := Config{Servers: []string{"127.0.0.1:1"}}.Fill(def)
	want := Config{Servers: []string{"127.0.0.1:1"}, HealthInterval: 4 * time.Second, HealthTimeout: 2 * time.Second,
		DrainTimeout: time.Minute, Timeout: 3 * time.Second, Retries: 5, RetryAfter: 7 * time.Second, Name: "def"}
	if got.HealthInterval != want.HealthInterval || got.HealthTimeout != want.HealthTimeout ||
		got.DrainTimeout != want.DrainTimeout || got.Timeout != want.Timeout || got.Retries != want.Retries ||
		got.RetryAfter != want.RetryAfter || got.Name != want.Name || len(got.Servers) != 1 {
		t.Fatalf("Fill of a zero config = %+v, want %+v", got, want)
	}

	// Set fields are kept; HealthTimeout follows the config's own interval; a negative Retries disables them.
	set := Config{Mode: ModeRandom, HealthInterval: 100 * time.Millisecond, DrainTimeout: time.Second,
		Timeout: time.Second, Retries: -1, RetryAfter: -1, Name: "mine"}.Fill(def)
	if set.Mode != ModeRandom || set.HealthInterval != 100*time.Millisecond || set.HealthTimeout != 50*time.Millisecond ||
		set.DrainTimeout != time.Second || set.Timeout != time.Second || set.Retries != 0 || set.RetryAfter != -1 ||
		set.Name != "mine" {
		t.Fatalf("Fill kept %+v", set)
	}
	if again := (Config{Retries: 1}).Fill(def); again.Retries != 1 {
		t.Fatalf("Retries 1 became %d", again.Retries)
	}
}
