package main

import (
	"crypto/sha256"
	"runtime"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// maxBurn bounds GET /burn?ms=N, so that one request cannot hold a CPU for long.
const maxBurn = 1000

// burnHandler hashes until the request has used ?ms= milliseconds of CPU time (default 5, at most 1000).
func burnHandler(c *fiber.Ctx) error {
	ms, err := strconv.Atoi(c.Query("ms", "5"))
	if err != nil || ms < 0 || ms > maxBurn {
		return fiber.NewError(fiber.StatusBadRequest, "ms must be an integer in [0, "+strconv.Itoa(maxBurn)+"]")
	}
	burn(time.Duration(ms) * time.Millisecond)
	return c.SendString("burned " + strconv.Itoa(ms) + "ms\n")
}

// burn hashes until the calling goroutine has used d of CPU time. It counts CPU time, not wall time: on a busy
// machine a goroutine waits for a CPU for much of its wall time, so a wall-clock loop would burn far less than
// asked, and the more so the higher the load it is meant to create.
func burn(d time.Duration) {
	// Locked, the goroutine is the only one to run on its thread, so the thread's CPU clock is the goroutine's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	spent := wallClock()
	if start, ok := threadCPUTime(); ok {
		spent = func() time.Duration {
			now, ok := threadCPUTime()
			if !ok {
				return d // the clock failed: stop rather than spin
			}
			return now - start
		}
	}
	var sum [sha256.Size]byte
	for spent() < d {
		for range 64 {
			sum = sha256.Sum256(sum[:])
		}
	}
}

// wallClock is the fallback where the thread's CPU time cannot be read.
func wallClock() func() time.Duration {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}
