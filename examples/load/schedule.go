package main

import (
	"math"
	"time"
)

// schedule is an open-loop send plan: request k is due at k/rate after the start, for every k whose instant
// falls before the end. Nothing in it depends on answers, so a slow server cannot slow it down.
type schedule struct {
	rate     float64 // per second, > 0
	duration time.Duration
}

// at returns the instant request k is due, from the start; past the range of a Duration (a tiny rate), the
// largest Duration.
func (s schedule) at(k int64) time.Duration {
	ns := float64(k) / s.rate * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// count returns how many requests the schedule sends: the first k with at(k) ≥ duration. It is computed from
// at itself, so that rounding can never send one more or one fewer than at promises.
func (s schedule) count() int64 {
	k := int64(math.Ceil(s.duration.Seconds() * s.rate))
	for k > 0 && s.at(k-1) >= s.duration {
		k--
	}
	for s.at(k) < s.duration {
		k++
	}
	return k
}
