package core

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// named is a Signal with a description, like the built-in ones.
type named struct {
	name string
	load float64
	err  error
}

func (n *named) Load() (float64, error) { return n.load, n.err }
func (n *named) String() string         { return n.name }

func TestMaxTakesTheHighestLoad(t *testing.T) {
	a, b := &named{name: "a", load: 0.3}, &named{name: "b", load: 0.7}
	m := NewMax(a, b)
	if got := m.String(); got != "max(a, b)" {
		t.Fatalf("String = %q", got)
	}
	tests := []struct {
		name         string
		a, b         float64
		aErr, bErr   error
		want         float64
		wantErr      bool
		wantReadings []Reading
	}{
		{name: "b higher", a: 0.3, b: 0.7, want: 0.7,
			wantReadings: []Reading{{Signal: "a", Load: 0.3}, {Signal: "b", Load: 0.7}}},
		{name: "a higher", a: 1.4, b: 0.2, want: 1.4,
			wantReadings: []Reading{{Signal: "a", Load: 1.4}, {Signal: "b", Load: 0.2}}},
		{name: "a fails: b alone", a: 5, b: 0.2, aErr: errors.New("gone"), want: 0.2,
			wantReadings: []Reading{{Signal: "a", Load: 1.4, Error: "gone"}, {Signal: "b", Load: 0.2}}},
		{name: "a NaN: b alone", a: math.NaN(), b: 0.25, want: 0.25,
			wantReadings: []Reading{{Signal: "a", Load: 1.4, Error: errBadReading.Error()}, {Signal: "b", Load: 0.25}}},
		{name: "both fail", a: 1, b: 1, aErr: errors.New("x"), bErr: errors.New("y"), wantErr: true},
		{name: "both zero", a: 0, b: 0, want: 0,
			wantReadings: []Reading{{Signal: "a", Load: 0}, {Signal: "b", Load: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.load, a.err, b.load, b.err = tt.a, tt.aErr, tt.b, tt.bErr
			got, err := m.Load()
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Fatalf("Load = %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
			if tt.wantErr {
				if !strings.Contains(err.Error(), "x") || !strings.Contains(err.Error(), "y") {
					t.Fatalf("error %q does not carry both signals' errors", err)
				}
				return
			}
			r := m.Readings()
			for i := range tt.wantReadings {
				if r[i] != tt.wantReadings[i] {
					t.Fatalf("Readings()[%d] = %+v, want %+v", i, r[i], tt.wantReadings[i])
				}
			}
		})
	}
}

func TestMaxRejectsNoSignal(t *testing.T) {
	for name, f := range map[string]func(){
		"none": func() { NewMax() },
		"nil":  func() { NewMax(&named{name: "a"}, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}
