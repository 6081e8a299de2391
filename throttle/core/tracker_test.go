package core

import (
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at      time.Duration
		verdict Verdict
		want    TriggerState
	}
	E, F, N, X, I := VerdictError, VerdictFalse, VerdictNoData, VerdictFiring, VerdictInvalid
	tests := []struct {
		name  string
		mode  FailMode
		steps []step
	}{
		{"fresh verdicts pass through", FailOpen, []step{
			{0, N, TriggerState{Verdict: N}},
			{time.Second, F, TriggerState{Verdict: F}},
			{2 * time.Second, X, TriggerState{Firing: true, Verdict: X}},
			{3 * time.Second, N, TriggerState{Verdict: N}},
		}},
		{"error before any success: fail-open at once", FailOpen, []step{
			{0, E, TriggerState{Verdict: E, Stale: true}},
		}},
		{"error before any success: fail-closed at once", FailClosed, []step{
			{0, E, TriggerState{Firing: true, Verdict: E, Stale: true}},
		}},
		{"firing kept through errors until staleness, then fail-open", FailOpen, []step{
			{0, X, TriggerState{Firing: true, Verdict: X}},
			{10 * time.Second, E, TriggerState{Firing: true, Verdict: E, Held: true}},
			{59 * time.Second, E, TriggerState{Firing: true, Verdict: E, Held: true}},
			{60 * time.Second, E, TriggerState{Firing: false, Verdict: E, Stale: true}},
			{90 * time.Second, E, TriggerState{Firing: false, Verdict: E, Stale: true}},
		}},
		{"not firing kept through errors, then fail-closed", FailClosed, []step{
			{0, F, TriggerState{Verdict: F}},
			{30 * time.Second, E, TriggerState{Verdict: E, Held: true}},
			{60 * time.Second, E, TriggerState{Firing: true, Verdict: E, Stale: true}},
		}},
		{"no data is a success: it refreshes staleness", FailClosed, []step{
			{0, N, TriggerState{Verdict: N}},
			{50 * time.Second, N, TriggerState{Verdict: N}},
			{100 * time.Second, E, TriggerState{Verdict: E, Held: true}},
			{110 * time.Second, E, TriggerState{Firing: true, Verdict: E, Stale: true}},
		}},
		{"invalid never fires, and errors while invalid keep it invalid past staleness", FailClosed, []step{
			{0, I, TriggerState{Verdict: I, Invalid: true}},
			{10 * time.Second, E, TriggerState{Verdict: E, Invalid: true}},
			{2 * time.Minute, E, TriggerState{Verdict: E, Invalid: true}},
			{3 * time.Minute, I, TriggerState{Verdict: I, Invalid: true}},
		}},
		{"invalid under fail-open", FailOpen, []step{
			{0, I, TriggerState{Verdict: I, Invalid: true}},
			{2 * time.Minute, E, TriggerState{Verdict: E, Invalid: true}},
		}},
		{"a valid trigger turning invalid stops firing at once", FailClosed, []step{
			{0, X, TriggerState{Firing: true, Verdict: X}},
			{10 * time.Second, I, TriggerState{Verdict: I, Invalid: true}},
			{20 * time.Second, E, TriggerState{Verdict: E, Invalid: true}},
		}},
		{"a success clears invalid: errors are held, then the fail mode applies again", FailClosed, []step{
			{0, I, TriggerState{Verdict: I, Invalid: true}},
			{10 * time.Second, X, TriggerState{Firing: true, Verdict: X}},
			{20 * time.Second, E, TriggerState{Firing: true, Verdict: E, Held: true}},
			{70 * time.Second, E, TriggerState{Firing: true, Verdict: E, Stale: true}},
			{80 * time.Second, N, TriggerState{Verdict: N}},
			{90 * time.Second, E, TriggerState{Verdict: E, Held: true}},
		}},
		{"a success after staleness recovers at once", FailClosed, []step{
			{0, F, TriggerState{Verdict: F}},
			{2 * time.Minute, E, TriggerState{Firing: true, Verdict: E, Stale: true}},
			{2*time.Minute + time.Second, F, TriggerState{Verdict: F}},
			{2*time.Minute + 2*time.Second, E, TriggerState{Verdict: E, Held: true}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := Tracker{Staleness: time.Minute, FailMode: tt.mode}
			for i, s := range tt.steps {
				if got := tr.Observe(t0.Add(s.at), s.verdict); got != s.want {
					t.Fatalf("step %d (%v at +%v): state %+v, want %+v", i, s.verdict, s.at, got, s.want)
				}
			}
		})
	}
}

func TestTrackerZeroValue(t *testing.T) {
	var tr Tracker
	now := time.Unix(0, 0)
	tr.Observe(now, VerdictFiring)
	if got := tr.Observe(now, VerdictError); got.Firing || !got.Stale {
		t.Fatalf("zero Tracker: error right after firing gave %+v, want stale and not firing (fail-open, no staleness)", got)
	}
	if at, ok := tr.LastSuccess(); !ok || !at.Equal(now) {
		t.Fatalf("LastSuccess = %v, %t", at, ok)
	}
}

func TestTrackerInvalidIsNotASuccess(t *testing.T) {
	tr := Tracker{Staleness: time.Minute, FailMode: FailClosed}
	t0 := time.Unix(1000, 0)
	tr.Observe(t0, VerdictFalse)
	tr.Observe(t0.Add(time.Minute), VerdictInvalid)
	if at, ok := tr.LastSuccess(); !ok || !at.Equal(t0) {
		t.Fatalf("LastSuccess after an invalid answer = %v, %t; want the success at %v", at, ok, t0)
	}
	var fresh Tracker
	fresh.Observe(t0, VerdictInvalid)
	if _, ok := fresh.LastSuccess(); ok {
		t.Fatal("an invalid answer counted as a success")
	}
}

func TestFailModeString(t *testing.T) {
	if FailOpen.String() != "fail-open" || FailClosed.String() != "fail-closed" {
		t.Errorf("FailMode strings: %q %q", FailOpen, FailClosed)
	}
}
