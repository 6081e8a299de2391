package core

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func TestEWMA(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    []time.Duration // the average after each sample
	}{
		{"first sample taken as is", []time.Duration{10 * ms}, []time.Duration{10 * ms}},
		{"alpha 0.3 towards a higher sample", []time.Duration{10 * ms, 20 * ms}, []time.Duration{10 * ms, 13 * ms}},
		{"alpha 0.3 towards a lower sample", []time.Duration{10 * ms, 5 * ms}, []time.Duration{10 * ms, 8500 * time.Microsecond}},
		{"equal samples keep the average", []time.Duration{7 * ms, 7 * ms, 7 * ms}, []time.Duration{7 * ms, 7 * ms, 7 * ms}},
		{"sample capped at 4x the average", []time.Duration{10 * ms, time.Second},
			// capped to 40 ms: 10 + 0.3*30
			[]time.Duration{10 * ms, 19 * ms}},
		{"cap is at least 2 ms for sub-ms averages", []time.Duration{100 * time.Microsecond, 5 * ms},
			// capped to 2 ms: 0.1 + 0.3*1.9
			[]time.Duration{100 * time.Microsecond, 670 * time.Microsecond}},
		{"a sample below 2 ms is not capped on a sub-ms average",
			[]time.Duration{100 * time.Microsecond, 1100 * time.Microsecond},
			[]time.Duration{100 * time.Microsecond, 400 * time.Microsecond}},
		{"sample below avg/4 replaces the average", []time.Duration{500 * ms, 10 * ms}, []time.Duration{500 * ms, 10 * ms}},
		{"sample exactly avg/4 is blended", []time.Duration{40 * ms, 10 * ms}, []time.Duration{40 * ms, 31 * ms}},
		{"three slow samples climb", []time.Duration{10 * ms, 35 * ms, 35 * ms, 35 * ms},
			[]time.Duration{10 * ms, 17500 * time.Microsecond, 22750 * time.Microsecond, 26425 * time.Microsecond}},
		{"negative sample counts as zero", []time.Duration{-ms}, []time.Duration{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e ewma
			if e.sampled {
				t.Fatal("zero value must hold no sample")
			}
			for i, s := range tt.samples {
				got := e.add(s)
				if d := got - tt.want[i]; d < -time.Microsecond || d > time.Microsecond {
					t.Fatalf("after sample %d (%v): avg %v, want %v", i, s, got, tt.want[i])
				}
				if got != e.avg || !e.sampled {
					t.Fatalf("add returned %v but holds %v (sampled %v)", got, e.avg, e.sampled)
				}
			}
		})
	}
}
