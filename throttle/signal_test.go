package throttle

import (
	"errors"
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
		{"matrix is a misconfigured query", model.Matrix{&model.SampleStream{Values: []model.SamplePair{{Value: 1}}}}, nil, VerdictError, true},
		{"string", &model.String{Value: "x"}, nil, VerdictError, true},
		{"no value", nil, nil, VerdictError, true},
		{"transport error", nil, &url.Error{Op: "Post", URL: "http://127.0.0.1:1", Err: errors.New("connection refused")}, VerdictError, true},
		{"API error", nil, &promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"}, VerdictError, true},
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
	E, F, N, X := VerdictError, VerdictFalse, VerdictNoData, VerdictFiring
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

func TestVerdictAndFailModeStrings(t *testing.T) {
	for v, want := range map[Verdict]string{VerdictNoData: "no_data", VerdictFalse: "false", VerdictFiring: "firing", VerdictError: "error", 9: "unknown"} {
		if v.String() != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", v, v.String(), want)
		}
	}
	if FailOpen.String() != "fail-open" || FailClosed.String() != "fail-closed" {
		t.Errorf("FailMode strings: %q %q", FailOpen, FailClosed)
	}
}
