package main

import (
	"testing"
	"time"
)

func TestScheduleCount(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		duration time.Duration
		want     int64
	}{
		{400, 20 * time.Second, 8000},
		{3, time.Second, 3},                   // 0, 1/3, 2/3
		{0.5, 20 * time.Second, 10},           // every 2 s
		{0.3, time.Second, 1},                 // only the one at 0
		{7, 1500 * time.Millisecond, 11},      // 10/7 s < 1.5 s ≤ 11/7 s
		{1000, time.Millisecond, 1},           // the one at 0; the next is due at 1 ms, the end
		{100, 10*time.Millisecond + 1, 2},     // just past the second
		{1e-300, 24 * time.Hour, 1},           // beyond a Duration: one, at 0
		{maxRate, maxDuration, 8_640_000_000}, // the largest run the flags allow
	} {
		s := schedule{rate: tc.rate, duration: tc.duration}
		if got := s.count(); got != tc.want {
			t.Errorf("rate %v for %v: %d requests, want %d", tc.rate, tc.duration, got, tc.want)
		}
	}
}

// Every request count promises is due before the end, the next one is not, and the instants only grow.
func TestScheduleAtAgreesWithCount(t *testing.T) {
	for _, rate := range []float64{0.1, 1, 3, 7, 33.3, 100, 400, 999.9, 1e5} {
		for _, d := range []time.Duration{time.Millisecond, 333 * time.Millisecond, time.Second, 20 * time.Second} {
			s := schedule{rate: rate, duration: d}
			n := s.count()
			if n < 1 {
				t.Fatalf("rate %v for %v: no request at all", rate, d)
			}
			if last := s.at(n - 1); last >= d {
				t.Errorf("rate %v for %v: request %d is due at %v, not before the end", rate, d, n-1, last)
			}
			if next := s.at(n); next < d {
				t.Errorf("rate %v for %v: request %d is due at %v, before the end, but not counted", rate, d, n, next)
			}
			for k := int64(1); k <= min(n, 10_000); k++ {
				if s.at(k) < s.at(k-1) {
					t.Fatalf("rate %v: request %d due before request %d", rate, k, k-1)
				}
			}
		}
	}
}
