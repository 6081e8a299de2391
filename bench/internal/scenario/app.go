package scenario

import (
	"bufio"
	"crypto/sha256"
	"os"
	"runtime"
	"time"

	"github.com/gofiber/fiber/v2"
)

// AwaitStart is the app's first step: it blocks until the driver, having moved this process into its groups,
// writes a line on stdin. It then applies the runtime's default GOMAXPROCS for those groups, so that every app
// runs with the GOMAXPROCS Go itself would choose there, whatever a dependency did at init (go-zero's core/load
// imports automaxprocs, which sets GOMAXPROCS from the cgroup quota it saw before the move, with its own
// rounding) and whether or not the runtime has yet noticed the new quota.
func AwaitStart() error {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	runtime.SetDefaultGOMAXPROCS()
	return nil
}

// AppSpec is what an app serves.
type AppSpec struct {
	// Iterations is the hash iterations of GET /work (see Calibrate).
	Iterations int
	// Work, if set, answers GET /work instead of the Iterations burn.
	Work fiber.Handler
	// Middleware guards /work and /ok, not /healthz, /procs or /stats.
	Middleware fiber.Handler
	// Stats, if set, answers GET /stats as JSON.
	Stats func() any
}

// NewApp returns the scenario app: GET /healthz, GET /procs (GOMAXPROCS), GET /stats, then the middleware, then
// GET /work (burns Iterations hashes, like a handler that renders or computes) and GET /ok (does nothing).
func NewApp(spec AppSpec) *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/procs", func(c *fiber.Ctx) error { return c.JSON(runtime.GOMAXPROCS(0)) })
	if spec.Stats != nil {
		app.Get("/stats", func(c *fiber.Ctx) error { return c.JSON(spec.Stats()) })
	}
	if spec.Middleware != nil {
		app.Use(spec.Middleware)
	}
	work := spec.Work
	if work == nil {
		work = func(c *fiber.Ctx) error {
			sum := Burn(spec.Iterations)
			return c.Send(sum[:4])
		}
	}
	app.Get("/work", work)
	app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
	return app
}

// Burn hashes iterations times: CPU work with no allocation, no I/O and nothing the compiler can drop.
func Burn(iterations int) [32]byte {
	var sum [32]byte
	for range iterations {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

// Calibrate returns how many Burn iterations take d of CPU time on this machine (run it outside any quota). It
// keeps the fastest of a few timings: a neighbour can only make a timing slower.
func Calibrate(d time.Duration) int {
	const n = 10000
	per := time.Duration(1<<63 - 1)
	for range 5 {
		start := time.Now()
		Burn(n)
		per = min(per, time.Since(start)/n)
	}
	return max(1, int(d/max(per, time.Nanosecond)))
}

// Spin starts n goroutines that burn CPU for the life of the process: an app using all it may use.
func Spin(n int) {
	for range n {
		go func() {
			for {
				Burn(1000)
			}
		}()
	}
}
