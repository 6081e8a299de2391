// Command overload measures loadshed under a real overload: a CPU-bound Fiber app confined to a cgroup (1 CPU by
// default), driven open-loop by vegeta from this (separate) process at a multiple of its capacity, next to the
// same app without shedding and with the shedders users would otherwise reach for.
//
//	cd bench && go run ./cmd/overload -duration 30s -factor 2     # as root: it creates a cgroup
//	cd bench && go run ./cmd/overload -duration 5s -signals default,cpu -modes plain,loadshed
//
// It prints one Markdown table: the unloaded p50/p99 (¼ capacity, loadshed with its default signal), the shed
// fraction at 0.8× capacity for each loadshed signal, then for every mode (and loadshed signal) at factor×
// capacity the goodput, shed, timeout and error fractions, p50/p99 of admitted requests, the p99's ratio to
// the unloaded one and the app's CPU (cores, and CPU time per 200).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/fiberguard/fiberguard/bench"
	"github.com/fiberguard/fiberguard/bench/gozero"
	"github.com/fiberguard/fiberguard/bench/internal/scenario"
	"github.com/fiberguard/fiberguard/loadshed"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/gofiber/fiber/v2"
	"github.com/zeromicro/go-zero/core/load"
)

// modes are the apps compared, in table order.
var modes = []string{"plain", "loadshed", "bbr", "failsafe", "gozero", "inflight"}

// procs, when set, is the GOMAXPROCS of every app (Go's default for the cgroup otherwise).
var procs = flag.Int("gomaxprocs", 0, "GOMAXPROCS of the apps (0: what Go chooses in their cgroup)")

// traceDir, when set, receives one CSV per loadshed run: the app's Status every 20ms while the load is offered.
var traceDir = flag.String("trace", "", "directory for a CSV trace of each loadshed run's Status every 20ms")

// inflightCap is the cap of the inflight mode: a middleware that admits a request only while fewer than this many
// are inside the handler. It shows where the queue of an overloaded CPU-bound app forms: in front of the
// middleware, among the connections' goroutines waiting for a P, where no in-flight count sees it.
var inflightCap = flag.Int("inflight", 2, "cap of the inflight mode: requests inside the handler at once")

var modeNames = map[string]string{
	"plain":    "no shedding",
	"loadshed": "loadshed",
	"bbr":      "go-kratos/aegis BBR (defaults)",
	"failsafe": "failsafe-go adaptivelimiter (defaults)",
	"gozero":   "go-zero core/load adaptive shedder (defaults)",
	"inflight": "an in-flight cap (-inflight)",
}

type params struct {
	work, duration, reference, timeout time.Duration
	factor, cpus, capacity             float64
	rounds                             int
	modes, signals                     []string
}

func main() {
	serve := flag.String("serve", "", "internal: run the app ("+strings.Join(modes, "|")+") on -addr after reading a line on stdin")
	addr := flag.String("addr", "", "internal: listen address of the app")
	signal := flag.String("signal", "default", "internal: the loadshed signal of the app")
	iterations := flag.Int("iterations", 0, "internal: hash iterations per request")
	var p params
	flag.DurationVar(&p.work, "work", time.Millisecond, "CPU time each request burns")
	flag.DurationVar(&p.duration, "duration", 30*time.Second, "length of each overload run")
	flag.DurationVar(&p.reference, "reference", 10*time.Second, "length of the unloaded and 0.8x capacity runs")
	flag.DurationVar(&p.timeout, "timeout", 10*time.Second, "client timeout of each request")
	flag.Float64Var(&p.factor, "factor", 2, "offered load as a multiple of capacity")
	flag.Float64Var(&p.cpus, "cpus", 1, "CPU quota of the app's cgroup")
	flag.Float64Var(&p.capacity, "capacity", 0, "the app's capacity in req/s instead of measuring it (0: measure), so that runs of different builds offer the same rates")
	flag.IntVar(&p.rounds, "rounds", 1, "rounds of every row after one capacity measurement; more than 1 prints each row's median and range")
	modeList := flag.String("modes", strings.Join(modes, ","), "apps to run at factor x capacity: "+strings.Join(modes, ","))
	signalList := flag.String("signals", "default,cpu", "loadshed signals to run, from: "+bench.SignalChoices())
	interval := flag.Duration("interval", 0, "loadshed Config.Interval (0: the default)")
	smoothing := flag.Float64("smoothing", 0, "loadshed Config.Smoothing (0: the default)")
	lower := flag.Float64("lower", 0, "loadshed Config.Lower (0: the default)")
	upper := flag.Float64("upper", 0, "loadshed Config.Upper (0: the default)")
	flag.Parse()
	gozero.DisableLogs()

	if *serve != "" {
		cfg := loadshed.Config{Interval: *interval, Smoothing: *smoothing, Lower: *lower, Upper: *upper}
		if err := runApp(*serve, *signal, *iterations, *addr, cfg); err != nil {
			log.Fatal(err)
		}
		return
	}
	var err error
	if !(p.capacity == 0 || p.capacity >= 1) {
		log.Fatalf("-capacity must be 0 (measure it) or at least 1 req/s, got %v", p.capacity)
	}
	if p.rounds < 1 {
		log.Fatalf("-rounds must be at least 1, got %d", p.rounds)
	}
	if p.modes, err = scenario.ParseList(*modeList, modes); err != nil {
		log.Fatal(err)
	}
	if p.signals, err = bench.ParseSignals(*signalList); err != nil {
		log.Fatal(err)
	}
	if err := drive(p); err != nil {
		log.Fatal(err)
	}
}

// runApp is the app process. Every mode runs with the GOMAXPROCS the runtime chooses for the app's cgroup
// (scenario.AwaitStart), so go-zero's import of automaxprocs cannot give its mode another one.
func runApp(mode, signal string, iterations int, addr string, cfg loadshed.Config) error {
	if err := scenario.AwaitStart(); err != nil {
		return err
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs) // as automaxprocs would under a 1-CPU quota, or a user's GOMAXPROCS
	}
	spec := scenario.AppSpec{Iterations: iterations}
	switch mode {
	case "plain":
	case "loadshed":
		sig, err := bench.Signal(signal)
		if err != nil {
			return err
		}
		cfg.Signal = sig
		s := loadshed.NewShedder(cfg) // after AwaitStart: the signal sees the app's cgroup
		defer func() { _ = s.Close() }()
		spec.Middleware, spec.Stats = s.Handler(), func() any { return s.Status() }
	case "bbr":
		spec.Middleware = bench.BBRMiddleware(bbr.NewLimiter())
	case "failsafe":
		spec.Middleware = bench.FailsafeMiddleware(adaptivelimiter.NewWithDefaults[any]())
	case "gozero":
		spec.Middleware = gozero.Middleware(load.NewAdaptiveShedder())
	case "inflight":
		var n atomic.Int64
		limit := int64(*inflightCap)
		spec.Middleware = func(c *fiber.Ctx) error {
			if n.Add(1) > limit {
				n.Add(-1)
				return c.SendStatus(fiber.StatusServiceUnavailable)
			}
			defer n.Add(-1)
			return c.Next()
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	log.Printf("app %s (signal %s): GOMAXPROCS %d", mode, signal, runtime.GOMAXPROCS(0))
	return scenario.NewApp(spec).Listen(addr) // the driver kills this process to stop it
}

// run is one measurement of the table.
type run struct {
	name string
	o    scenario.Outcome
	cpu  usage
}

// usage is the app's CPU over one measurement: cores is its CPU time over the measurement's wall time, perOK
// its CPU time over the 200s it served (rejections included), zero when it served none.
type usage struct {
	cores float64
	perOK time.Duration
}

func (u usage) String() string {
	if u.perOK == 0 {
		return fmt.Sprintf("%.2f · –", u.cores)
	}
	return fmt.Sprintf("%.2f · %.2f ms", u.cores, float64(u.perOK)/float64(time.Millisecond))
}

func drive(p params) error {
	var clean scenario.Cleanup
	defer clean.OnInterrupt()() // stops watching only after the cleanup below
	defer clean.Run()

	scenario.RemoveStale("fiberguard-overload", "cpu", "cpuacct")
	cg, err := scenario.NewGroup(fmt.Sprintf("fiberguard-overload-%d", os.Getpid()), p.cpus, "cpu", "cpuacct")
	if err != nil {
		return err
	}
	clean.Add(cg.Remove)
	iterations := scenario.Calibrate(p.work)
	reference := false // measure runs the unloaded reference
	log.Printf("calibrated %d hash iterations for %v of CPU per request", iterations, p.work)

	// measure starts the app in mode (with a loadshed signal), lets it settle idle, then runs f against it.
	// The unloaded reference runs loadshed as users get it: the -interval, -smoothing, -lower and -upper flags
	// tune the measured runs only.
	measure := func(mode, signal string, f func(base string) scenario.Outcome) (scenario.Outcome, usage, error) {
		args := []string{"-serve", mode, "-signal", signal, "-iterations", strconv.Itoa(iterations)}
		if !reference {
			for _, name := range []string{"interval", "smoothing", "lower", "upper", "inflight", "gomaxprocs"} {
				args = append(args, "-"+name, flag.Lookup(name).Value.String())
			}
		}
		a, err := scenario.StartApp(scenario.AppOptions{Args: args, Groups: []*scenario.Group{cg}})
		if err != nil {
			return scenario.Outcome{}, usage{}, err
		}
		defer clean.Add(a.Stop)()
		time.Sleep(time.Second) // let the samplers settle on an idle app
		if *traceDir != "" && mode == "loadshed" {
			defer traceStatus(a, filepath.Join(*traceDir, fmt.Sprintf("%s-%d.csv", signal, time.Now().UnixMilli())))()
		}
		var o scenario.Outcome
		cpu, wall, err := a.CPUDuring(func() { o = f(a.Base) })
		if err != nil {
			return scenario.Outcome{}, usage{}, err
		}
		u := usage{cores: cpu.Seconds() / wall.Seconds()}
		if o.OK > 0 {
			u.perOK = cpu / time.Duration(o.OK)
		}
		return o, u, nil
	}

	capRPS, capCPU := p.capacity, ""
	if capRPS == 0 {
		const d = 5 * time.Second
		_, u, err := measure("plain", "default", func(base string) scenario.Outcome {
			capRPS = scenario.Capacity(base+"/work", d)
			return scenario.Outcome{OK: int(capRPS*d.Seconds() + 0.5)} // the closed loop's 200s, for the CPU per 200
		})
		if err != nil {
			return err
		}
		capCPU = fmt.Sprintf(" (app CPU · per 200: %v)", u)
	}
	if !(capRPS >= 1) {
		return fmt.Errorf("capacity %.1f req/s: the app serves nothing", capRPS)
	}
	log.Printf("capacity %.0f req/s", capRPS)

	at := func(rate float64, d time.Duration) func(string) scenario.Outcome {
		return func(base string) scenario.Outcome { return scenario.Attack(base+"/work", rate, d, p.timeout) }
	}
	// oneRound measures every row once: the unloaded reference, the 0.8x rows, then the overload rows.
	oneRound := func() ([]run, error) {
		var runs []run
		add := func(name, mode, signal string, f func(string) scenario.Outcome) error {
			o, u, err := measure(mode, signal, f)
			if err != nil {
				return err
			}
			log.Printf("%s: %+v; app CPU · per 200: %v", name, o, u)
			runs = append(runs, run{name, o, u})
			return nil
		}
		reference = true
		if err := add("unloaded (¼ capacity, loadshed default)", "loadshed", "default", at(capRPS/4, p.reference)); err != nil {
			return nil, err
		}
		reference = false
		if slices.Contains(p.modes, "loadshed") {
			for _, sig := range p.signals {
				if err := add("0.8x capacity, loadshed "+sig, "loadshed", sig, at(capRPS*0.8, p.reference)); err != nil {
					return nil, err
				}
			}
		}
		rate := capRPS * p.factor
		for _, mode := range p.modes {
			signals := []string{"default"}
			if mode == "loadshed" {
				signals = p.signals
			}
			for _, sig := range signals {
				name := fmt.Sprintf("%.3gx capacity, %s", p.factor, modeNames[mode])
				if mode == "loadshed" {
					name += " " + sig
				}
				if err := add(name, mode, sig, at(rate, p.duration)); err != nil {
					return nil, err
				}
			}
		}
		return runs, nil
	}
	var rounds [][]run
	for range p.rounds {
		runs, err := oneRound()
		if err != nil {
			return err
		}
		rounds = append(rounds, runs)
	}

	fmt.Printf("Capacity (closed loop, 16 clients, %.3g CPU cgroup, %v CPU per request): **%.0f req/s**%s\n\n", p.cpus, p.work, capRPS, capCPU)
	if len(rounds) == 1 {
		printRuns(rounds[0], capRPS)
	} else {
		printRounds(rounds, capRPS)
	}
	return nil
}

// printRuns prints one round's table; the last column divides by the round's unloaded p99 (its first row).
func printRuns(runs []run, capRPS float64) {
	unloaded := runs[0].o
	fmt.Printf("| run | offered req/s | goodput req/s | goodput / capacity | shed | timeouts | errors | p50 admitted | p99 admitted | p99 / unloaded p99 | app CPU · per 200 |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		ratio := "–"
		if unloaded.P99 > 0 && r.o.P99 > 0 {
			ratio = fmt.Sprintf("%.1fx", float64(r.o.P99)/float64(unloaded.P99))
		}
		fmt.Printf("| %s | %.0f | %.0f | %.0f%% | %s | %s | %s | %s | %s | %s | %v |\n", r.name, r.o.Offered, r.o.Goodput,
			100*r.o.Goodput/capRPS, scenario.Pct(r.o.ShedFrac()), scenario.Pct(r.o.TimeoutFrac()),
			scenario.Pct(r.o.ErrFrac()), scenario.Ms(r.o.P50), scenario.Ms(r.o.P99), ratio, r.cpu)
	}
}

// printRounds prints each row's median and range over the rounds; each round's p99 ratio divides by that
// round's own unloaded p99.
func printRounds(rounds [][]run, capRPS float64) {
	fmt.Printf("%d rounds, each cell the median (min–max):\n\n", len(rounds))
	fmt.Printf("| run | goodput / capacity | shed | timeouts | p99 admitted | p99 / unloaded p99 | app CPU |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range rounds[0] {
		var good, shed, timeouts, p99, ratio, cores []float64
		for _, runs := range rounds {
			o, unloaded := runs[i].o, runs[0].o
			good = append(good, o.Goodput/capRPS)
			cores = append(cores, runs[i].cpu.cores)
			shed = append(shed, o.ShedFrac())
			timeouts = append(timeouts, o.TimeoutFrac())
			p99 = append(p99, float64(o.P99)/float64(time.Millisecond))
			if unloaded.P99 > 0 && o.P99 > 0 {
				ratio = append(ratio, float64(o.P99)/float64(unloaded.P99))
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %s ms | %s× | %s |\n", r.name, spread(good, 100, "%.0f%%"), spread(shed, 100, "%.1f %%"),
			spread(timeouts, 100, "%.1f %%"), spread(p99, 1, "%.3g"), spread(ratio, 1, "%.1f"), spread(cores, 1, "%.2f"))
	}
}

// spread formats the median and range of v, each multiplied by scale, as "median (min–max)".
func spread(v []float64, scale float64, format string) string {
	if len(v) == 0 {
		return "–"
	}
	f := func(x float64) string { return fmt.Sprintf(format, x*scale) }
	return f(scenario.Median(v)) + " (" + f(slices.Min(v)) + "–" + f(slices.Max(v)) + ")"
}

// traceStatus writes the app's Status every 20ms to file, as CSV (milliseconds since the start, load,
// probability, admitted and rejected so far, then each reading's load), until the returned stop is called.
func traceStatus(a *scenario.App, file string) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		f, err := os.Create(file)
		if err != nil {
			log.Printf("trace: %v", err)
			return
		}
		defer f.Close()
		start := time.Now()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			var st loadshedcore.Status
			if err := a.GetJSON("/stats", &st); err != nil {
				continue
			}
			line := fmt.Sprintf("%d,%.4f,%.4f,%d,%d", time.Since(start).Milliseconds(), st.Load, st.Probability, st.Admitted, st.Rejected)
			for _, r := range st.Readings {
				line += fmt.Sprintf(",%.4f", r.Load)
			}
			fmt.Fprintln(f, line)
		}
	}()
	return func() { close(done); <-exited }
}
