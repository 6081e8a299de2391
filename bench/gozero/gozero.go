// Package gozero wraps go-zero's adaptive shedder as a Fiber middleware, for comparison with loadshed.
//
// It is apart from package bench because importing go-zero's core/load has effects at init in every binary that
// links it: automaxprocs sets GOMAXPROCS from the cgroup quota, a goroutine samples CPU every 250 ms and logs
// statistics to stdout every minute, and core/proc traps SIGINT and SIGTERM (re-raising them seconds later).
// Only the commands that compare against go-zero import it.
package gozero

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/zeromicro/go-zero/core/load"
	"github.com/zeromicro/go-zero/core/stat"
)

// DisableLogs stops go-zero's periodic CPU, memory and shedding statistics, which would land in the middle of a
// command's output.
func DisableLogs() {
	stat.DisableLog()
	load.DisableLog()
}

// Middleware sheds with s as go-zero's own HTTP server does: 503 when Allow refuses, and the request's outcome
// reported to the shedder (Fail for an error or a 5xx, Pass otherwise).
func Middleware(s load.Shedder) fiber.Handler {
	return func(c *fiber.Ctx) error {
		promise, err := s.Allow()
		if errors.Is(err, load.ErrServiceOverloaded) {
			return c.SendStatus(fiber.StatusServiceUnavailable)
		}
		if err != nil {
			return err
		}
		err = c.Next()
		if err != nil || c.Response().StatusCode() >= fiber.StatusInternalServerError {
			promise.Fail()
		} else {
			promise.Pass()
		}
		return err
	}
}
