//go:build unix

package core

import (
	"syscall"
	"time"
)

// processUsage is this process's CPU time, user and system, across all its threads. On Linux the kernel derives
// it from the scheduler's nanosecond runtime, so short intervals measure exactly.
func processUsage() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
