package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// durN draws a duration in [0, d).
func durN(rng *rand.Rand, d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d))) }

// exactQuantile is the nearest-rank quantile the histogram estimates: the ceil(q·n)-th smallest value.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

func TestHistogramQuantilesAgainstExactOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string]func() time.Duration{
		"uniform 1µs-1s": func() time.Duration { return time.Microsecond + durN(rng, time.Second) },
		"log-normal around 5ms": func() time.Duration {
			return time.Duration(float64(5*time.Millisecond) * math.Exp(rng.NormFloat64()))
		},
		// Fast rejections and slow answers, as under shedding.
		"bimodal 200µs and 2s": func() time.Duration {
			if rng.IntN(10) < 7 {
				return 200*time.Microsecond + durN(rng, 50*time.Microsecond)
			}
			return 2*time.Second + durN(rng, 500*time.Millisecond)
		},
		"constant 20ms":   func() time.Duration { return 20 * time.Millisecond },
		"tiny 0-63ns":     func() time.Duration { return durN(rng, time.Duration(64)) },
		"huge up to 290y": func() time.Duration { return time.Duration(rng.Int64N(math.MaxInt64)) },
	}
	for name, draw := range sets {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{1, 2, 7, 100, 10_000, 100_001} {
				var h histogram
				values := make([]time.Duration, n)
				for i := range values {
					values[i] = draw()
					h.record(values[i])
				}
				slices.Sort(values)
				for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
					got, ok := h.quantile(q)
					want := exactQuantile(values, q)
					if !ok {
						t.Fatalf("n=%d q=%v: no estimate", n, q)
					}
					// Exact below 64 ns, else within 1/128 of the value.
					if diff := math.Abs(float64(got - want)); diff > float64(want)/128 {
						t.Errorf("n=%d q=%v: got %v, exact %v (off by %.3f%%)", n, q, got, want, 100*diff/float64(want))
					}
				}
				if got, _ := h.quantile(1); got != values[n-1] {
					t.Errorf("n=%d: the maximum reads %v, want %v", n, got, values[n-1])
				}
			}
		})
	}
}

func TestHistogramSmallValuesAreExact(t *testing.T) {
	var h histogram
	for v := range 64 {
		h.record(time.Duration(v))
	}
	for k := 1; k <= 64; k++ {
		q := float64(k) / 64
		if got, _ := h.quantile(q); got != time.Duration(k-1) {
			t.Errorf("q=%v: got %v, want %v", q, got, time.Duration(k-1))
		}
	}
}

func TestHistogramBucketsCoverTheirValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	values := []time.Duration{0, 1, 63, 64, 65, 127, 128, 129, time.Millisecond, time.Second, math.MaxInt64}
	for range 10_000 {
		values = append(values, time.Duration(rng.Int64N(math.MaxInt64)>>rng.IntN(63)))
	}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("%d: bucket %d outside [0, %d)", v, i, histBuckets)
		}
		lo, width := bucketRange(i)
		if uint64(v) < lo || uint64(v)-lo >= width {
			t.Fatalf("%d: bucket %d holds [%d, %d+%d)", v, i, lo, lo, width)
		}
		if v >= 64 && float64(width) > float64(v)/64 {
			t.Fatalf("%d: bucket %d is %d wide, more than 1/64 of the value", v, i, width)
		}
	}
}

func TestHistogramMergeIsRecordingBoth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var a, b, both histogram
	for range 1000 {
		v := durN(rng, time.Second)
		a.record(v)
		both.record(v)
		w := 3*time.Second + durN(rng, time.Second)
		b.record(w)
		both.record(w)
	}
	var empty histogram
	a.merge(&empty) // merging nothing changes nothing
	a.merge(&b)
	if a != both {
		t.Fatalf("merged: n=%d min=%v max=%v; recorded together: n=%d min=%v max=%v", a.n, a.min, a.max, both.n, both.min, both.max)
	}
	empty.merge(&both)
	if empty != both {
		t.Fatal("merging into an empty histogram differs from the source")
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	var h histogram
	if _, ok := h.quantile(0.5); ok {
		t.Fatal("an empty histogram gave a quantile")
	}
	h.record(-time.Second) // a clock step backwards reads as 0, never as a bucket out of range
	if got, ok := h.quantile(0.5); !ok || got != 0 {
		t.Fatalf("got %v, %v; want 0, true", got, ok)
	}
}
