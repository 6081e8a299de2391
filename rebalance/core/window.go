package core

// window keeps this node's open connections over the last intervals and reports the smallest. A rise is counted
// only once it has lasted the whole window; a fall is counted at once.
type window struct {
	counts []int
	filled int
	next   int
}

// newWindow keeps size counts, clamped to [1, maxWindowIntervals+1] whatever the caller asks: the size comes from
// user input.
func newWindow(size int) *window {
	size = min(max(size, 1), maxWindowIntervals+1)
	return &window{counts: make([]int, size)}
}

// add records a count and returns the smallest of those kept.
func (w *window) add(count int) int {
	w.counts[w.next] = count
	w.next = (w.next + 1) % len(w.counts)
	if w.filled < len(w.counts) {
		w.filled++
	}
	low := count
	for _, c := range w.counts[:w.filled] {
		low = min(low, c)
	}
	return low
}
