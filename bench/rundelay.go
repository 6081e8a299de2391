package bench

import (
	"runtime"
	"sync"
	"time"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// runDelay is an experimental signal: the time this process's threads spent runnable but waiting for a CPU
// (the second field of /proc/self/task/*/schedstat), per second and per GOMAXPROCS, over target. A thread that
// exits takes its count with it; a sum that goes back starts a new baseline.
type runDelay struct {
	mu     sync.Mutex
	target float64
	prev   time.Duration
	at     time.Time
}

func (r *runDelay) Load() (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, wait, err := scenario.ThreadTimes("self")
	if err != nil {
		return 0, err
	}
	now := time.Now()
	if r.at.IsZero() || wait < r.prev {
		r.prev, r.at = wait, now
		return 0, nil
	}
	rate := float64(wait-r.prev) / float64(now.Sub(r.at)) / float64(runtime.GOMAXPROCS(0))
	r.prev, r.at = wait, now
	return rate / r.target, nil
}

func (r *runDelay) String() string { return "run delay of this process's threads" }
