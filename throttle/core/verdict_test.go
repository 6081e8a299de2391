package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"testing"

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

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{VerdictNoData: "no_data", VerdictFalse: "false", VerdictFiring: "firing", VerdictError: "error", VerdictInvalid: "invalid", 9: "unknown"} {
		if v.String() != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", v, v.String(), want)
		}
	}
}
