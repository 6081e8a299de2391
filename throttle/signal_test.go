package throttle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

func vec(values ...float64) model.Vector {
	v := model.Vector{}
	for i, f := range values {
		v = append(v, &model.Sample{
			Metric: model.Metric{"instance": model.LabelValue(string(rune('a' + i)))},
			Value:  model.SampleValue(f),
		})
	}
	return v
}

func TestClassify(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		value   model.Value
		err     error
		want    Verdict
		wantErr bool
	}{
		{"empty vector: x > 0.5 false, or series missing", model.Vector{}, nil, VerdictNoData, false},
		{"nil vector", model.Vector(nil), nil, VerdictNoData, false},
		{"x > bool 0.5 false", vec(0), nil, VerdictFalse, false},
		{"x > bool 0.5 true", vec(1), nil, VerdictFiring, false},
		{"x > 0.5 true keeps its value", vec(0.7), nil, VerdictFiring, false},
		{"negative sample fires", vec(-3), nil, VerdictFiring, false},
		{"one of many fires", vec(0, 0, 1), nil, VerdictFiring, false},
		{"all zero", vec(0, 0, 0), nil, VerdictFalse, false},
		{"NaN only is no data", vec(nan), nil, VerdictNoData, false},
		{"NaN and zero is false", vec(nan, 0), nil, VerdictFalse, false},
		{"NaN and one fires", vec(nan, 1), nil, VerdictFiring, false},
		{"+Inf fires", vec(math.Inf(1)), nil, VerdictFiring, false},
		{"scalar 0", &model.Scalar{Value: 0}, nil, VerdictFalse, false},
		{"scalar 1", &model.Scalar{Value: 1}, nil, VerdictFiring, false},
		{"scalar 0.2", &model.Scalar{Value: 0.2}, nil, VerdictFiring, false},
		{"scalar NaN", &model.Scalar{Value: model.SampleValue(nan)}, nil, VerdictNoData, false},
		{"nil scalar", (*model.Scalar)(nil), nil, VerdictError, true},
		{"matrix: the query is a range vector, whatever the data", model.Matrix{&model.SampleStream{Values: []model.SamplePair{{Value: 1}}}}, nil, VerdictInvalid, true},
		{"string: the query is a string literal", &model.String{Value: "x"}, nil, VerdictInvalid, true},
		{"no value: a malformed answer", nil, nil, VerdictError, true},
		{"transport error", nil, &url.Error{Op: "Post", URL: "http://127.0.0.1:1", Err: errors.New("connection refused")}, VerdictError, true},
		{"bad_data: PromQL parse error", nil, &promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"}, VerdictInvalid, true},
		{"bad_data wrapped", nil, fmt.Errorf("querying: %w", &promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"}), VerdictInvalid, true},
		{"execution: depends on the data (422)", nil, &promv1.Error{Type: promv1.ErrExec, Msg: "many-to-many matching not allowed"}, VerdictError, true},
		{"timeout", nil, &promv1.Error{Type: promv1.ErrTimeout, Msg: "query timed out"}, VerdictError, true},
		{"canceled", nil, &promv1.Error{Type: promv1.ErrCanceled, Msg: "query canceled"}, VerdictError, true},
		{"server error: 5xx", nil, &promv1.Error{Type: promv1.ErrServer, Msg: "server error: 503"}, VerdictError, true},
		{"client error: 4xx other than 400 and 422", nil, &promv1.Error{Type: promv1.ErrClient, Msg: "client error: 404"}, VerdictError, true},
		{"bad response", nil, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "readObjectStart"}, VerdictError, true},
		{"unavailable", nil, &promv1.Error{Type: "unavailable", Msg: "busy"}, VerdictError, true},
		{"deadline", nil, context.DeadlineExceeded, VerdictError, true},
		{"error wins over a value", vec(1), errors.New("boom"), VerdictError, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Classify(tt.value, tt.err)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Classify = %v, %v; want %v, error %t", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at      time.Duration
		verdict Verdict
		want    State
	}
	E, F, N, X, I := VerdictError, VerdictFalse, VerdictNoData, VerdictFiring, VerdictInvalid
	tests := []struct {
		name  string
		mode  FailMode
		steps []step
	}{
		{"fresh verdicts pass through", FailOpen, []step{
			{0, N, State{Verdict: N}},
			{time.Second, F, State{Verdict: F}},
			{2 * time.Second, X, State{Firing: true, Verdict: X}},
			{3 * time.Second, N, State{Verdict: N}},
		}},
		{"error before any success: fail-open at once", FailOpen, []step{
			{0, E, State{Verdict: E, Stale: true}},
		}},
		{"error before any success: fail-closed at once", FailClosed, []step{
			{0, E, State{Firing: true, Verdict: E, Stale: true}},
		}},
		{"firing kept through errors until staleness, then fail-open", FailOpen, []step{
			{0, X, State{Firing: true, Verdict: X}},
			{10 * time.Second, E, State{Firing: true, Verdict: E, Held: true}},
			{59 * time.Second, E, State{Firing: true, Verdict: E, Held: true}},
			{60 * time.Second, E, State{Firing: false, Verdict: E, Stale: true}},
			{90 * time.Second, E, State{Firing: false, Verdict: E, Stale: true}},
		}},
		{"not firing kept through errors, then fail-closed", FailClosed, []step{
			{0, F, State{Verdict: F}},
			{30 * time.Second, E, State{Verdict: E, Held: true}},
			{60 * time.Second, E, State{Firing: true, Verdict: E, Stale: true}},
		}},
		{"no data is a success: it refreshes staleness", FailClosed, []step{
			{0, N, State{Verdict: N}},
			{50 * time.Second, N, State{Verdict: N}},
			{100 * time.Second, E, State{Verdict: E, Held: true}},
			{110 * time.Second, E, State{Firing: true, Verdict: E, Stale: true}},
		}},
		{"invalid never fires, and errors while invalid keep it invalid past staleness", FailClosed, []step{
			{0, I, State{Verdict: I, Invalid: true}},
			{10 * time.Second, E, State{Verdict: E, Invalid: true}},
			{2 * time.Minute, E, State{Verdict: E, Invalid: true}},
			{3 * time.Minute, I, State{Verdict: I, Invalid: true}},
		}},
		{"invalid under fail-open", FailOpen, []step{
			{0, I, State{Verdict: I, Invalid: true}},
			{2 * time.Minute, E, State{Verdict: E, Invalid: true}},
		}},
		{"a valid signal turning invalid stops firing at once", FailClosed, []step{
			{0, X, State{Firing: true, Verdict: X}},
			{10 * time.Second, I, State{Verdict: I, Invalid: true}},
			{20 * time.Second, E, State{Verdict: E, Invalid: true}},
		}},
		{"a success clears invalid: errors are held, then the fail mode applies again", FailClosed, []step{
			{0, I, State{Verdict: I, Invalid: true}},
			{10 * time.Second, X, State{Firing: true, Verdict: X}},
			{20 * time.Second, E, State{Firing: true, Verdict: E, Held: true}},
			{70 * time.Second, E, State{Firing: true, Verdict: E, Stale: true}},
			{80 * time.Second, N, State{Verdict: N}},
			{90 * time.Second, E, State{Verdict: E, Held: true}},
		}},
		{"a success after staleness recovers at once", FailClosed, []step{
			{0, F, State{Verdict: F}},
			{2 * time.Minute, E, State{Firing: true, Verdict: E, Stale: true}},
			{2*time.Minute + time.Second, F, State{Verdict: F}},
			{2*time.Minute + 2*time.Second, E, State{Verdict: E, Held: true}},
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

func TestVerdictAndFailModeStrings(t *testing.T) {
	for v, want := range map[Verdict]string{VerdictNoData: "no_data", VerdictFalse: "false", VerdictFiring: "firing", VerdictError: "error", VerdictInvalid: "invalid", 9: "unknown"} {
		if v.String() != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", v, v.String(), want)
		}
	}
	if FailOpen.String() != "fail-open" || FailClosed.String() != "fail-closed" {
		t.Errorf("FailMode strings: %q %q", FailOpen, FailClosed)
	}
}
