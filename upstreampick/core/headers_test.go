package core

import (
	"math"
	"testing"
	"time"
)

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
		{0, "1"},
		{math.MaxInt64, "9223372037"}, // no overflow on the way up
		{-1, ""},
		{math.MinInt64, ""},
	} {
		if got := string(retryAfterHeader(tt.d)); got != tt.want {
			t.Errorf("retryAfterHeader(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
