package core

import (
	"errors"
	"runtime"
	"time"

	"github.com/shirou/gopsutil/v3/cpu"
)

// hostCPUs is the number of CPUs host-wide /proc/stat covers.
func hostCPUs() int {
	if n, err := cpu.Counts(true); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// hostUsage is the host-wide busy CPU time (every state but idle and iowait).
func hostUsage() (time.Duration, error) {
	ts, err := cpu.Times(false)
	if err != nil {
		return 0, err
	}
	if len(ts) == 0 {
		return 0, errors.New("loadshed: no host CPU times")
	}
	t := ts[0]
	busy := t.User + t.System + t.Nice + t.Irq + t.Softirq + t.Steal
	return time.Duration(busy * float64(time.Second)), nil
}
