//go:build !unix

package core

import (
	"errors"
	"time"
)

// processUsage is not implemented outside Unix: the CPU signal reports an error and the Shedder keeps load 0.
func processUsage() (time.Duration, error) {
	return 0, errors.New("loadshed: this process's CPU time is not readable on this platform")
}
