package core

import "sync/atomic"

// MaxWindow is the largest window a Window can hold (2^21 - 1 concurrent requests).
const MaxWindow = 1<<21 - 1

// The whole state of a Window is one 64-bit word, so that admission, completion, growth and backoff are each a
// single compare-and-swap and never disagree with one another:
//
//	bits  0..20  in-flight requests
//	bits 21..41  completions counted toward the current round
//	bits 42..62  window size
//	bit  63      hold: a trigger fires, so completions do not grow the window
const (
	fieldBits   = 21
	fieldMask   = 1<<fieldBits - 1
	ackedShift  = fieldBits
	sizeShift   = 2 * fieldBits
	holdBit     = uint64(1) << 63
	inflightOne = uint64(1)
)

func unpack(s uint64) (inflight, acked, size uint64, hold bool) {
	return s & fieldMask, s >> ackedShift & fieldMask, s >> sizeShift & fieldMask, s&holdBit != 0
}

func pack(inflight, acked, size uint64, hold bool) uint64 {
	s := inflight | acked<<ackedShift | size<<sizeShift
	if hold {
		s |= holdBit
	}
	return s
}

// Window is an AIMD concurrency window, safe for concurrent use and lock-free.
//
// A request takes a slot with TryAcquire while fewer requests than the window are in flight, and gives it back
// with Release. The window starts at its minimum and grows like TCP congestion avoidance: by 1 each time a
// window's worth of requests has completed (about +1 per round trip, not +1 per request). A completion counts
// toward growth only while the window is in use, that is while at least half of it is in flight (RFC 7661: an
// application-limited sender does not grow its window), and only while Hold is off. Backoff halves the window.
// The window never leaves [min, max].
//
// The zero value is not usable; create a Window with NewWindow.
type Window struct {
	state    atomic.Uint64
	min, max uint64
}

// NewWindow returns a window of size lo that stays within [lo, hi]. It panics unless
// 1 <= lo <= hi <= MaxWindow.
func NewWindow(lo, hi int) *Window {
	if lo < 1 || hi < lo || hi > MaxWindow {
		panic("throttle: NewWindow needs 1 <= min <= max <= MaxWindow")
	}
	w := &Window{min: uint64(lo), max: uint64(hi)}
	w.state.Store(pack(0, 0, uint64(lo), false))
	return w
}

// TryAcquire takes a slot and reports true when fewer requests than the window are in flight; otherwise it
// changes nothing and reports false. Every true must be matched by one Release.
func (w *Window) TryAcquire() bool {
	for {
		s := w.state.Load()
		// A full window is turned away with a plain load: rejecting under overload writes nothing shared.
		if s&fieldMask >= s>>sizeShift&fieldMask {
			return false
		}
		if w.state.CompareAndSwap(s, s+inflightOne) {
			return true
		}
	}
}

// Release gives back a slot taken by TryAcquire and counts the completion toward the window's growth. A Release
// without a matching TryAcquire is ignored rather than corrupting the count.
func (w *Window) Release() {
	for {
		s := w.state.Load()
		inflight, acked, size, hold := unpack(s)
		if inflight == 0 {
			return
		}
		next := s - inflightOne
		// The completing request still counts as in flight here: the window was in use if at least half of it
		// was taken when this request ended.
		if !hold && inflight*2 >= size {
			acked++
			if acked >= size {
				acked = 0
				if size < w.max {
					size++
				}
			}
			next = pack(inflight-1, acked, size, hold)
		}
		if w.state.CompareAndSwap(s, next) {
			return
		}
	}
}

// Backoff halves the window, never below min, and starts a new growth round. It returns the new size.
// The caller decides how often to back off: throttle does it once per evaluation of a firing trigger.
func (w *Window) Backoff() int {
	for {
		s := w.state.Load()
		inflight, _, size, hold := unpack(s)
		size = max(size/2, w.min)
		if w.state.CompareAndSwap(s, pack(inflight, 0, size, hold)) {
			return int(size)
		}
	}
}

// SetHold turns growth off (true) or back on (false). Throttle holds the window while any trigger fires.
func (w *Window) SetHold(hold bool) {
	for {
		s := w.state.Load()
		next := s &^ holdBit
		if hold {
			next |= holdBit
		}
		if s == next || w.state.CompareAndSwap(s, next) {
			return
		}
	}
}

// Size returns the current window.
func (w *Window) Size() int { return int(w.state.Load() >> sizeShift & fieldMask) }

// InFlight returns the number of slots taken.
func (w *Window) InFlight() int { return int(w.state.Load() & fieldMask) }

// Held reports whether growth is held.
func (w *Window) Held() bool { return w.state.Load()&holdBit != 0 }

// Min returns the smallest window.
func (w *Window) Min() int { return int(w.min) }

// Max returns the largest window.
func (w *Window) Max() int { return int(w.max) }
