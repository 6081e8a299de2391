package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runDelay is an experimental signal: the time this process's threads spent runnable but waiting for a CPU
// (the second field of /proc/self/task/*/schedstat), per second and per GOMAXPROCS, over target. A thread that
// exits takes its count with it; a sum that goes back starts a new baseline.
type runDelay struct {
	mu     sync.Mutex
	target float64
	prev   int64
	at     time.Time
}

func (r *runDelay) Load() (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	files, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data))
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		sum += v
	}
	now := time.Now()
	if r.at.IsZero() || sum < r.prev {
		r.prev, r.at = sum, now
		return 0, nil
	}
	rate := float64(sum-r.prev) / float64(now.Sub(r.at)) / float64(runtime.GOMAXPROCS(0))
	r.prev, r.at = sum, now
	return rate / r.target, nil
}

func (r *runDelay) String() string { return "run delay of this process's threads" }
