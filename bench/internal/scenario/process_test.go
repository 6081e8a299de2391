package scenario

import (
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{name: "plain", want: 370 * time.Millisecond,
			stat: "4242 (overload) S 1 4242 4242 0 -1 4194560 500 0 0 0 25 12 0 0 20 0 9 0 1234 1000000 200 18446744073709551615\n"},
		{name: "spaces and parentheses in the command", want: 3 * time.Second,
			stat: "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 100 200 0 0 20 0 1 0 1 1 1 1\n"},
		{name: "truncated", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 100", wantErr: true},
		{name: "no command", stat: "7 x R 1", wantErr: true},
		{name: "not a number", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 1x 2 0 0 20 0 1 0 1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %v, %v; want %v (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseHostBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice: busy = 100+5+50+3+2+1 ticks.
	got, err := parseHostBusy([]byte("cpu  100 5 50 9000 40 3 2 1 7 0\ncpu0 50 2 25 4500 20 1 1 0 3 0\n"))
	if err != nil || got != 1610*time.Millisecond {
		t.Fatalf("got %v, %v; want 1.61s", got, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 4 5 6 7\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := parseHostBusy([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
