package main

import (
	"github.com/fiberguard/fiberguard/loadshed"
	"github.com/gofiber/fiber/v2"
)

// setupLoadshed installs the loadshed feature: global shedding by the CPU the gateway may use, and GET /burn?ms=N,
// which burns about N milliseconds of CPU, to drive the load up and watch shedding on /status.
//
//	FIBERGUARD_LOADSHED_DRYRUN=1   count decisions only (also true, yes, on; 0, false, no, off keep it off)
func setupLoadshed(app *fiber.App, e env) (func() any, func(), error) {
	dryRun, err := envBool(e, "FIBERGUARD_LOADSHED_DRYRUN")
	if err != nil {
		return nil, nil, err
	}
	s := loadshed.NewShedder(loadshed.Config{
		// The gateway's own pages answer under overload; the other modules' demo routes show those modules.
		Next:       func(c *fiber.Ctx) bool { return observing(c) || demoRoute(c) },
		Critical:   func(c *fiber.Ctx) bool { return c.Get("X-Priority") == "critical" },
		DryRun:     dryRun,
		Registerer: e.registry,
	})
	app.Use(s.Handler())
	app.Get("/burn", burnHandler)
	return func() any { return s.Status() }, func() { _ = s.Close() }, nil
}
