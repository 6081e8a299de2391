package main

import (
	"flag"
	"fmt"
	"log"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/gofiber/fiber/v2"
	"github.com/zeromicro/go-zero/core/load"

	"github.com/fiberguard/fiberguard/bench"
	"github.com/fiberguard/fiberguard/bench/gozero"
	"github.com/fiberguard/fiberguard/bench/internal/scenario"
	"github.com/fiberguard/fiberguard/loadshed"
)

// CPU per request of each handler.
const (
	cpuWork   = time.Millisecond       // cpu
	fastWork  = 200 * time.Microsecond // mixed, 9 requests in 10
	slowWork  = 5 * time.Millisecond   // mixed, 1 request in 10
	waitSleep = 20 * time.Millisecond  // wait: the time it waits, as on a database
	waitWork  = 50 * time.Microsecond  // wait: the CPU it burns besides
	slowEvery = 10                     // mixed: one slow request in slowEvery
	serveFlag = "-serve"               // the first argument of the app process
)

// appArgs are the app's arguments: the driver's binary re-executed as the app of one run.
func appArgs(mode, handler, procs string, perMs int) []string {
	return []string{serveFlag, mode, "-handler", handler, "-gomaxprocs", procs, "-per-ms", strconv.Itoa(perMs)}
}

// serve is the app process. It joins its groups (scenario.AwaitStart sets the GOMAXPROCS Go chooses there), then
// sets -gomaxprocs, then makes its shedder, so that the shedder sees the app as it will run.
func serve(args []string) error {
	fs := flag.NewFlagSet("matrix -serve", flag.ContinueOnError)
	mode := fs.String("serve", "", "the app: "+fmt.Sprint(modes))
	handler := fs.String("handler", "cpu", "what GET /work does")
	procs := fs.String("gomaxprocs", "default", "GOMAXPROCS, or default")
	perMs := fs.Int("per-ms", 1, "hash iterations per millisecond of CPU")
	addr := fs.String("addr", "", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	gozero.DisableLogs()
	if err := scenario.AwaitStart(); err != nil {
		return err
	}
	if *procs != "default" {
		n, err := strconv.Atoi(*procs)
		if err != nil {
			return fmt.Errorf("-gomaxprocs %q: %w", *procs, err)
		}
		runtime.GOMAXPROCS(n)
	}
	work, err := workHandler(*handler, *perMs)
	if err != nil {
		return err
	}
	spec := scenario.AppSpec{Work: work}
	switch *mode {
	case "plain":
	case "failsafe":
		spec.Middleware = bench.FailsafeMiddleware(adaptivelimiter.NewWithDefaults[any]())
	case "gozero":
		spec.Middleware = gozero.Middleware(load.NewAdaptiveShedder())
	case "loadshed", "loadshed-cpu":
		var cfg loadshed.Config // the library's default: no Signal set
		if *mode == "loadshed-cpu" {
			if cfg.Signal, err = bench.Signal("cpu"); err != nil {
				return err
			}
		}
		s := loadshed.NewShedder(cfg)
		defer func() { _ = s.Close() }()
		spec.Middleware, spec.Stats = s.Handler(), func() any { return s.Status() }
	default:
		return fmt.Errorf("unknown mode %q", *mode)
	}
	log.Printf("app %s, handler %s: GOMAXPROCS %d", *mode, *handler, runtime.GOMAXPROCS(0))
	return scenario.NewApp(spec).Listen(*addr) // the driver kills this process to stop it
}

// workHandler is GET /work: cpu burns ~1 ms; mixed burns ~5 ms on every tenth request (by arrival count) and
// ~0.2 ms on the others; wait sleeps 20 ms and burns ~0.05 ms.
func workHandler(name string, perMs int) (fiber.Handler, error) {
	iters := func(d time.Duration) int { return max(1, int(float64(perMs)*d.Seconds()*1000+0.5)) }
	burn := func(c *fiber.Ctx, n int) error {
		sum := scenario.Burn(n)
		return c.Send(sum[:4])
	}
	switch name {
	case "cpu":
		n := iters(cpuWork)
		return func(c *fiber.Ctx) error { return burn(c, n) }, nil
	case "mixed":
		fast, slow := iters(fastWork), iters(slowWork)
		var count atomic.Uint64
		return func(c *fiber.Ctx) error {
			if slowAt(count.Add(1) - 1) {
				return burn(c, slow)
			}
			return burn(c, fast)
		}, nil
	case "wait":
		n := iters(waitWork)
		return func(c *fiber.Ctx) error {
			time.Sleep(waitSleep)
			return burn(c, n)
		}, nil
	}
	return nil, fmt.Errorf("unknown handler %q", name)
}

// slowAt says whether the mixed handler's nth request (from 0) is a slow one: every tenth, so that any 100
// consecutive requests hold exactly 10 slow ones and every mode meets the same mix, not a random one.
func slowAt(n uint64) bool { return n%slowEvery == slowEvery-1 }

// meanWork is the mean CPU per request of a handler.
func meanWork(handler string) time.Duration {
	switch handler {
	case "mixed":
		return (fastWork*(slowEvery-1) + slowWork) / slowEvery
	case "wait":
		return waitWork
	}
	return cpuWork
}
