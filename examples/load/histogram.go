package main

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's resolution: each power of two is split into 2^subBits equal buckets, so a
// bucket is at most 1/64 of its lower bound wide and its midpoint is within 1/128 of any value in it.
const (
	subBits    = 6
	subBuckets = 1 << subBits
	// Durations are non-negative int64 nanoseconds: exponents 0..62.
	histBuckets = (63 - subBits + 1) * subBuckets
)

// histogram counts durations in log-linear buckets: values below 64 ns exactly, larger ones within 1/128 of
// their size. Its memory is fixed (about 30 KB) however many values it holds. The zero value is empty.
type histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	min, max time.Duration
}

// bucketOf returns the bucket index of v (v ≥ 0).
func bucketOf(v time.Duration) int {
	u := uint64(v)
	if u < subBuckets {
		return int(u)
	}
	e := bits.Len64(u) - 1 // ≥ subBits
	sub := int(u>>(e-subBits)) & (subBuckets - 1)
	return (e-subBits+1)*subBuckets + sub
}

// bucketRange returns the values bucket i holds: [lo, lo+width).
func bucketRange(i int) (lo, width uint64) {
	if i < subBuckets {
		return uint64(i), 1
	}
	e := i/subBuckets + subBits - 1
	width = uint64(1) << (e - subBits)
	return uint64(1)<<e + uint64(i%subBuckets)*width, width
}

func (h *histogram) record(v time.Duration) {
	v = max(v, 0)
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if h.n == 0 || v > h.max {
		h.max = v
	}
	h.n++
}

// merge adds o's values to h.
func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.n == 0 || o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
}

// quantile returns an estimate of the q-quantile (0 < q ≤ 1) by nearest rank: the value v such that at least
// q of the values are ≤ v. The estimate is the midpoint of v's bucket, kept within the recorded min and max, so
// it is exact below 64 ns and within 1/128 of v above; the smallest and the largest value are exact. ok is false when the histogram is empty.
func (h *histogram) quantile(q float64) (v time.Duration, ok bool) {
	if h.n == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	switch rank { // the extremes are known exactly
	case 1:
		return h.min, true
	case h.n:
		return h.max, true
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		lo, width := bucketRange(i)
		mid := time.Duration(lo + (width-1)/2)
		return min(max(mid, h.min), h.max), true
	}
	return h.max, true // unreachable: the counts add up to n
}
