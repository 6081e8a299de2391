package core_test

import (
	"fmt"

	"github.com/fiberguard/fiberguard/throttle/core"
)

// The AIMD window on its own: +1 per window's worth of completions while in use, halved by Backoff.
func ExampleWindow() {
	w := core.NewWindow(4, 8)
	fill := func() {
		for w.TryAcquire() {
		}
	}
	fill()
	for range 4 { // a full round of completions, each replaced by a new request
		w.Release()
		fill()
	}
	fmt.Println("after one round:", w.Size())
	fmt.Println("after a backoff:", w.Backoff())
	// Output:
	// after one round: 5
	// after a backoff: 4
}
