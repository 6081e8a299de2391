//go:build !(linux || darwin || freebsd)

package main

import "time"

// threadCPUTime cannot read a thread's CPU time here: burn falls back to wall time.
func threadCPUTime() (time.Duration, bool) { return 0, false }
