package main

import (
	"crypto/sha256"
	"strconv"
	"time"

	"github.com/fiberguard/fiberguard/loadshed"
	"github.com/gofiber/fiber/v2"
)

// The loadshed feature: global shedding by the CPU the gateway may use, and GET /burn?ms=N, which burns about N
// milliseconds of CPU, to drive the load up and watch shedding on /status.
//
//	FIBERGUARD_LOADSHED_DRYRUN=1   count decisions only
func init() {
	register(feature{name: "loadshed", order: 10, setup: setupLoadshed})
}

func setupLoadshed(app *fiber.App, e env) (func() any, func(), error) {
	s := loadshed.NewShedder(loadshed.Config{
		// Observability endpoints stay reachable under overload.
		Next:       func(c *fiber.Ctx) bool { return c.Path() == "/status" || c.Path() == "/metrics" },
		Critical:   func(c *fiber.Ctx) bool { return c.Get("X-Priority") == "critical" },
		DryRun:     e.getenv("FIBERGUARD_LOADSHED_DRYRUN") == "1",
		Registerer: e.registry,
	})
	app.Use(s.Handler())
	app.Get("/burn", burnHandler)
	return func() any { return s.Stats() }, func() { _ = s.Close() }, nil
}

// burnHandler hashes for about ?ms= milliseconds of CPU time (default 5, at most 1000).
func burnHandler(c *fiber.Ctx) error {
	ms, err := strconv.Atoi(c.Query("ms", "5"))
	if err != nil || ms < 0 || ms > 1000 {
		return fiber.NewError(fiber.StatusBadRequest, "ms must be an integer in [0, 1000]")
	}
	var sum [32]byte
	for deadline := time.Now().Add(time.Duration(ms) * time.Millisecond); time.Now().Before(deadline); {
		for i := 0; i < 64; i++ {
			sum = sha256.Sum256(sum[:])
		}
	}
	return c.SendString("burned " + strconv.Itoa(ms) + "ms\n")
}
