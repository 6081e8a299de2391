package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/gofiber/fiber/v2"
	"github.com/zeromicro/go-zero/core/load"

	"github.com/fiberguard/fiberguard/bench"
	"github.com/fiberguard/fiberguard/bench/gozero"
	"github.com/fiberguard/fiberguard/bench/internal/scenario"
	"github.com/fiberguard/fiberguard/loadshed"
	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
	nhloadshed "github.com/fiberguard/fiberguard/nethttp/loadshed"
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
func appArgs(framework, mode, handler, procs string, perMs int) []string {
	return []string{serveFlag, mode, "-framework", framework, "-handler", handler, "-gomaxprocs", procs, "-per-ms",
		strconv.Itoa(perMs)}
}

// serve is the app process. It joins its groups (scenario.AwaitStart sets the GOMAXPROCS Go chooses there), then
// sets -gomaxprocs, then makes its shedder, so that the shedder sees the app as it will run.
func serve(args []string) error {
	fs := flag.NewFlagSet("matrix -serve", flag.ContinueOnError)
	mode := fs.String("serve", "", "the app: "+fmt.Sprint(modes))
	framework := fs.String("framework", "fiber", "the app's framework: "+fmt.Sprint(frameworks))
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
	work, err := workFunc(*handler, *perMs)
	if err != nil {
		return err
	}
	var stop func()
	switch *framework {
	case "fiber":
		var app *fiber.App
		if app, stop, err = fiberApp(*mode, work); err != nil {
			return err
		}
		defer stop()
		log.Printf("app %s, handler %s: GOMAXPROCS %d", *mode, *handler, runtime.GOMAXPROCS(0))
		return app.Listen(*addr) // the driver kills this process to stop it
	case "nethttp":
		var app http.Handler
		if app, stop, err = httpApp(*mode, work); err != nil {
			return err
		}
		defer stop()
		log.Printf("app %s (net/http), handler %s: GOMAXPROCS %d", *mode, *handler, runtime.GOMAXPROCS(0))
		return scenario.ListenHTTP(app, *addr) // the driver kills this process to stop it
	}
	return fmt.Errorf("unknown framework %q", *framework)
}

// fiberApp is the Fiber v2 app of a mode, its shedder a Fiber middleware before GET /work, and what stops the
// shedder.
func fiberApp(mode string, work func() [32]byte) (*fiber.App, func(), error) {
	spec := scenario.AppSpec{Work: func(c *fiber.Ctx) error {
		sum := work()
		return c.Send(sum[:4])
	}}
	stop := func() {}
	switch modeKind(mode) {
	case "plain":
	case "failsafe":
		spec.Middleware = bench.FailsafeMiddleware(adaptivelimiter.NewWithDefaults[any]())
	case "gozero":
		spec.Middleware = gozero.Middleware(load.NewAdaptiveShedder())
	case "loadshed", "loadshed-cpu":
		cfg, err := shedConfig(mode, loadshed.Config{}) // the library's default: no Signal set
		if err != nil {
			return nil, nil, err
		}
		s := loadshed.NewShedder(cfg)
		stop = func() { _ = s.Close() }
		spec.Middleware, spec.Stats = s.Handler(), func() any { return s.Status() }
	default:
		return nil, nil, fmt.Errorf("unknown mode %q", mode)
	}
	return scenario.NewApp(spec), stop, nil
}

// httpApp is the net/http app of a mode: the same shedders, each a net/http middleware (loadshed through its
// net/http adapter) before the same GET /work, on the standard library's ServeMux; and what stops the shedder.
func httpApp(mode string, work func() [32]byte) (http.Handler, func(), error) {
	spec := scenario.HTTPAppSpec{Work: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		sum := work()
		_, _ = w.Write(sum[:4])
	})}
	stop := func() {}
	switch modeKind(mode) {
	case "plain":
	case "failsafe":
		spec.Middleware = bench.FailsafeHTTPMiddleware(adaptivelimiter.NewWithDefaults[any]())
	case "gozero":
		spec.Middleware = gozero.HTTPMiddleware(load.NewAdaptiveShedder())
	case "loadshed", "loadshed-cpu":
		cfg, err := shedConfig(mode, nhloadshed.Config{})
		if err != nil {
			return nil, nil, err
		}
		s := nhloadshed.NewShedder(cfg)
		stop = func() { _ = s.Close() }
		spec.Middleware, spec.Stats = s.Handler(), func() any { return s.Status() }
	default:
		return nil, nil, fmt.Errorf("unknown mode %q", mode)
	}
	return scenario.NewHTTPApp(spec), stop, nil
}

// shedConfig is cfg with the Signal of a loadshed mode: none (loadshed's default) for "loadshed", the CPU signal
// alone for "loadshed-cpu", and bench's signal of that name for "loadshed:NAME" (with FixedBand's bands, so that
// "loadshed:fixed=P" rejects each request with probability P).
func shedConfig[C, H any](mode string, cfg loadshedcore.Config[C, H]) (loadshedcore.Config[C, H], error) {
	name := "default"
	if mode == "loadshed-cpu" {
		name = "cpu"
	} else if v, ok := strings.CutPrefix(mode, signalModePrefix); ok {
		name = v
	}
	sig, err := bench.Signal(name)
	if err != nil {
		return cfg, err
	}
	cfg.Signal = sig
	return bench.FixedBand(name, cfg), nil
}

// workFunc is the work of GET /work, shared by both frameworks' handlers; it returns the hash the handler answers
// with the first 4 bytes of. cpu burns ~1 ms; mixed burns ~5 ms on every tenth request (by arrival count) and
// ~0.2 ms on the others; wait sleeps 20 ms and burns ~0.05 ms.
func workFunc(name string, perMs int) (func() [32]byte, error) {
	iters := func(d time.Duration) int { return max(1, int(float64(perMs)*d.Seconds()*1000+0.5)) }
	switch name {
	case "cpu":
		n := iters(cpuWork)
		return func() [32]byte { return scenario.Burn(n) }, nil
	case "mixed":
		fast, slow := iters(fastWork), iters(slowWork)
		var count atomic.Uint64
		return func() [32]byte {
			if slowAt(count.Add(1) - 1) {
				return scenario.Burn(slow)
			}
			return scenario.Burn(fast)
		}, nil
	case "wait":
		n := iters(waitWork)
		return func() [32]byte {
			time.Sleep(waitSleep)
			return scenario.Burn(n)
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
