// Command matrix measures loadshed across deployment shapes, side by side with no shedding and the adaptive
// shedders users would otherwise reach for: for each cell (the app's cgroup-v1 CPU quota, its GOMAXPROCS and what
// its handler does) it measures the cell's capacity (no shedding, closed loop), its unloaded latency, then every
// mode at every offered load (open loop, vegeta, multiples of that capacity); optionally a step from 0.25× to 3×
// capacity, and the app with no limit beside busy neighbours. The apps are Fiber v2 apps, or with -framework
// nethttp the same handlers and shedders on net/http.
//
//	cd bench && go run ./cmd/matrix                                  # as root: it creates cgroups
//	cd bench && go run ./cmd/matrix -quotas 1 -gomaxprocs default,1 -loads 0.8,2 -modes plain,loadshed -duration 3s
//	cd bench && go run ./cmd/matrix -framework nethttp -quotas 1 -gomaxprocs default,1 -loads 2
//
// It prints Markdown tables (the cells' capacities, one row per cell × load × mode, the steps), the goals each
// loadshed row misses, and writes every row to a TSV file (-out). Progress goes to stderr.
package main

import (
	"errors"
	"flag"
	"log"
	"os"

	"github.com/fiberguard/fiberguard/bench/gozero"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == serveFlag {
		if err := serve(os.Args[1:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	// The driver links go-zero too (for the apps it re-executes): its statistics, every minute, would land in the
	// tables on stdout.
	gozero.DisableLogs()
	p, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if err := run(p, os.Stdout); err != nil {
		log.Fatal(err)
	}
}
