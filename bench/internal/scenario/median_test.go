package scenario

import "testing"

func TestMedian(t *testing.T) {
	tests := []struct {
		v    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.v...)
		if got := Median(tt.v); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.v, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.v[i] {
				t.Fatalf("Median reordered its argument: %v, was %v", tt.v, in)
			}
		}
	}
}
