package core

import (
	"sync"
	"sync/atomic"
	"testing"
)

// saturate keeps the window full and completes n requests one at a time, refilling after each: the steady
// state of a backend under more load than the window admits.
func saturate(w *Window, n int) {
	for w.TryAcquire() {
	}
	for range n {
		w.Release()
		for w.TryAcquire() {
		}
	}
}

// drain releases every slot taken without counting the completions toward growth.
func drain(w *Window) {
	held := w.Held()
	w.SetHold(true)
	for w.InFlight() > 0 {
		w.Release()
	}
	w.SetHold(held)
}

func TestWindowGrowsOnePerRound(t *testing.T) {
	tests := []struct {
		name        string
		min, max    int
		completions int
		want        int
	}{
		{"starts at min", 4, 100, 0, 4},
		{"one short of a round", 4, 100, 3, 4},
		{"one round of 4", 4, 100, 4, 5},
		{"second round needs 5 more", 4, 100, 8, 5},
		{"two rounds", 4, 100, 9, 6},
		{"three rounds", 4, 100, 4 + 5 + 6, 7},
		{"window of 1 grows per completion then per round", 1, 100, 1 + 2 + 3, 4},
		{"clamped at max", 4, 6, 1000, 6},
		{"min equals max", 3, 3, 1000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.min, tt.max)
			saturate(w, tt.completions)
			if got := w.Size(); got != tt.want {
				t.Fatalf("after %d saturated completions: window %d, want %d", tt.completions, got, tt.want)
			}
			if w.InFlight() != w.Size() {
				t.Fatalf("saturated window: in flight %d, want %d", w.InFlight(), w.Size())
			}
		})
	}
}

func TestWindowDoesNotGrowWhenUnused(t *testing.T) {
	tests := []struct {
		name     string
		size     int // min = max - grown to this first
		inFlight int // held steady while requests complete
		want     int
	}{
		{"less than half in use: no growth", 10, 4, 10},
		{"one in flight: no growth", 10, 1, 10},
		{"exactly half in use grows", 10, 5, 11},
		{"full grows", 10, 10, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.size, 100)
			for range tt.inFlight {
				if !w.TryAcquire() {
					t.Fatal("TryAcquire refused below the window")
				}
			}
			// Each completion is replaced at once, so in-flight stays at tt.inFlight when the next one ends.
			for range tt.size {
				w.Release()
				w.TryAcquire()
			}
			if got := w.Size(); got != tt.want {
				t.Fatalf("window %d after a round with %d of %d in flight, want %d", got, tt.inFlight, tt.size, tt.want)
			}
		})
	}
}

func TestWindowBackoffHalvesAndClamps(t *testing.T) {
	tests := []struct {
		name     string
		min, max int
		grow     int // saturated completions before backing off
		backoffs int
		want     int
	}{
		{"no backoff", 2, 64, 0, 0, 2},
		{"at min stays at min", 2, 64, 0, 1, 2},
		{"10 halves to 5", 2, 64, 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9, 1, 5},
		{"10 twice is 2", 2, 64, 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9, 2, 2},
		{"never below min", 4, 64, 4 + 5 + 6 + 7 + 8, 5, 4},
		{"odd sizes round down", 1, 64, 1 + 2 + 3 + 4 + 5 + 6 + 7, 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.min, tt.max)
			saturate(w, tt.grow)
			drain(w)
			var got int
			for range tt.backoffs {
				got = w.Backoff()
			}
			if tt.backoffs > 0 && got != w.Size() {
				t.Fatalf("Backoff returned %d, Size is %d", got, w.Size())
			}
			if w.Size() != tt.want {
				t.Fatalf("window %d after growing by %d completions and %d backoffs, want %d", w.Size(), tt.grow, tt.backoffs, tt.want)
			}
		})
	}
}

func TestWindowBackoffStartsANewRound(t *testing.T) {
	w := NewWindow(2, 64)
	saturate(w, 2+3+4+5+6+7) // window 8
	saturate(w, 7)           // 7 of the 8 completions needed for 9
	drain(w)
	if w.Size() != 8 {
		t.Fatalf("setup: window %d, want 8", w.Size())
	}
	w.Backoff() // 4, and the 7 completions counted toward 9 are forgotten
	saturate(w, 3)
	if w.Size() != 4 {
		t.Fatalf("window %d: completions before a backoff counted toward the next round", w.Size())
	}
	saturate(w, 1)
	if w.Size() != 5 {
		t.Fatalf("window %d after a full round following the backoff, want 5", w.Size())
	}
}

func TestWindowInFlightAboveWindowAfterBackoff(t *testing.T) {
	w := NewWindow(1, 64)
	saturate(w, 1+2+3+4+5+6+7) // window 8, 8 in flight
	w.SetHold(true)            // as while the trigger that caused the backoff fires
	w.Backoff()
	if w.Size() != 4 || w.InFlight() != 8 {
		t.Fatalf("window %d in flight %d, want 4 and 8", w.Size(), w.InFlight())
	}
	if w.TryAcquire() {
		t.Fatal("admitted while in flight exceeds the halved window")
	}
	for range 4 {
		w.Release()
	}
	if w.TryAcquire() {
		t.Fatal("admitted with 4 in flight in a window of 4")
	}
	w.Release()
	if !w.TryAcquire() {
		t.Fatal("refused with 3 in flight in a window of 4")
	}
}

func TestWindowHoldStopsGrowth(t *testing.T) {
	w := NewWindow(4, 64)
	w.SetHold(true)
	if !w.Held() {
		t.Fatal("Held() false after SetHold(true)")
	}
	saturate(w, 100)
	if w.Size() != 4 {
		t.Fatalf("window grew to %d while held", w.Size())
	}
	w.SetHold(false)
	saturate(w, 4)
	if w.Size() != 5 {
		t.Fatalf("window %d after a round once released, want 5", w.Size())
	}
	if w.InFlight() != 5 {
		t.Fatalf("hold changed the in-flight count: %d", w.InFlight())
	}
}

func TestWindowReleaseWithoutAcquireIsIgnored(t *testing.T) {
	w := NewWindow(3, 10)
	w.Release()
	if w.InFlight() != 0 || w.Size() != 3 {
		t.Fatalf("in flight %d window %d after a stray Release, want 0 and 3", w.InFlight(), w.Size())
	}
	for range 3 {
		if !w.TryAcquire() {
			t.Fatal("stray Release corrupted the window")
		}
	}
	if w.TryAcquire() {
		t.Fatal("admitted beyond the window")
	}
}

func TestWindowLimitsLargestValues(t *testing.T) {
	w := NewWindow(MaxWindow, MaxWindow)
	if w.Size() != MaxWindow || w.InFlight() != 0 {
		t.Fatalf("window %d in flight %d", w.Size(), w.InFlight())
	}
	for range MaxWindow {
		w.TryAcquire()
	}
	if w.TryAcquire() || w.InFlight() != MaxWindow || w.Size() != MaxWindow {
		t.Fatalf("full window of MaxWindow: in flight %d window %d", w.InFlight(), w.Size())
	}
	w.SetHold(true)
	for w.InFlight() > 0 {
		w.Release()
	}
	if w.Size() != MaxWindow || !w.Held() {
		t.Fatalf("fields overlap: window %d held %t", w.Size(), w.Held())
	}
}

func TestNewWindowPanics(t *testing.T) {
	for _, tc := range [][2]int{{0, 1}, {-1, 5}, {5, 4}, {1, MaxWindow + 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewWindow(%d, %d) did not panic", tc[0], tc[1])
				}
			}()
			NewWindow(tc[0], tc[1])
		}()
	}
}

// TestWindowConcurrentNeverExceeds hammers the window from many goroutines while another one backs it off:
// the number of holders never exceeds the largest window, every slot comes back, and the window stays in bounds.
func TestWindowConcurrentNeverExceeds(t *testing.T) {
	const lo, hi = 2, 16
	w := NewWindow(lo, hi)
	var holders, peak atomic.Int64
	var workers, backoff sync.WaitGroup
	stop := make(chan struct{})
	backoff.Add(1)
	go func() {
		defer backoff.Done()
		for {
			select {
			case <-stop:
				return
			default:
				w.Backoff()
				w.SetHold(false)
			}
		}
	}()
	for range 8 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for range 20000 {
				if !w.TryAcquire() {
					continue
				}
				n := holders.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if s := w.Size(); s < lo || s > hi {
					t.Errorf("window %d out of [%d, %d]", s, lo, hi)
				}
				holders.Add(-1)
				w.Release()
			}
		}()
	}
	workers.Wait()
	close(stop)
	backoff.Wait()
	if p := peak.Load(); p > hi {
		t.Fatalf("peak holders %d exceed the largest window %d", p, hi)
	}
	if w.InFlight() != 0 {
		t.Fatalf("in flight %d after every slot was released", w.InFlight())
	}
}
