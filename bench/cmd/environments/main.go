// Command environments measures what loadshed sheds, signal by signal, where a signal can be fooled: with no
// group, in an unlimited group, in a cpu-only v1 group (usage accounted at the root), in a 0.5-CPU group; while
// the app is idle beside busy neighbours, while it burns all it may use on a quiet host, and while neighbours
// starve it below its load.
//
//	cd bench && go run ./cmd/environments                                  # as root: it creates cgroups
//	cd bench && go run ./cmd/environments -cell 3s -signals default,cpu -envs root,half
//
// It prints Markdown: the environments (the app's groups as /proc/PID/cgroup shows them, its GOMAXPROCS), a table
// of shed fractions (rows: environment × scenario; columns: loadshed's signals, then the anchors: no shedding,
// failsafe-go's adaptive limiter and go-zero's adaptive shedder, each with its defaults) with each scenario's
// goal (a starved cell's is judged after the overload's onset, which it reports apart), and per cell what
// loadshed's Status (GET /stats) says of its signal, its last load and the app's own CPU use.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/zeromicro/go-zero/core/load"

	"github.com/fiberguard/fiberguard/bench"
	"github.com/fiberguard/fiberguard/bench/gozero"
	"github.com/fiberguard/fiberguard/bench/internal/scenario"
	"github.com/fiberguard/fiberguard/loadshed"
)

// environment is where the app runs.
type environment struct {
	name, desc  string
	cpus        float64  // quota; 0: none
	controllers []string // groups the app joins; none: it stays in the driver's
}

var environments = []environment{
	{"root", "no group: the app stays in the driver's groups", 0, nil},
	{"unlimited", "cpu+cpuacct group, no quota", 0, []string{"cpu", "cpuacct"}},
	{"cpu-only", "cpu group with a 1-CPU quota; cpuacct stays the driver's", 1, []string{"cpu"}},
	{"half", "cpu+cpuacct group with a 0.5-CPU quota", 0.5, []string{"cpu", "cpuacct"}},
}

// scenarios, in table order. "starved" runs only where there is no quota: the app is short of CPU because of
// its neighbours, not of a limit.
var scenarios = []string{"idle", "burning", "starved"}

var scenarioDesc = map[string]string{
	"idle":    "idle, busy neighbours",
	"burning": "burning what it may use, host quiet",
	"starved": "starved by neighbours, overloaded",
}

// anchors are the columns after loadshed's: the app without shedding and with the shedders loadshed is compared
// with, each with its defaults, as Fiber middlewares in loadshed's place.
var anchors = []string{"plain", "failsafe", "gozero"}

var anchorNames = map[string]string{
	"plain":    "no shedding",
	"failsafe": "failsafe-go adaptivelimiter",
	"gozero":   "go-zero core/load shedder",
}

// column is one column of the table: a loadshed signal, or an anchor (mode is not "loadshed").
type column struct{ mode, signal string }

func (c column) String() string {
	if c.mode == "loadshed" {
		return c.signal
	}
	return anchorNames[c.mode]
}

// columns lists the table's columns: one per loadshed signal, then one per anchor of the comma-separated list
// (blank: none). Each column appears once.
func columns(signals []string, anchorList string) ([]column, error) {
	var names []string
	if strings.TrimSpace(anchorList) != "" {
		var err error
		if names, err = scenario.ParseList(anchorList, anchors); err != nil {
			return nil, fmt.Errorf("anchors: %w", err)
		}
	}
	var cols []column
	add := func(c column) {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	for _, sig := range signals {
		add(column{"loadshed", sig})
	}
	for _, a := range names {
		add(column{a, "default"})
	}
	return cols, nil
}

type params struct {
	signals, envs, scenarios []string
	columns                  []column
	cell, settle, timeout    time.Duration
	onset                    time.Duration // of a starved cell's overload, before the measured cell
	work                     time.Duration
	rate, over               float64
	neighbours               int
	idleNice, starveNice     int // of the neighbours
	appNice                  int
}

func main() {
	serve := flag.String("serve", "", "internal: run the app (loadshed|"+strings.Join(anchors, "|")+") on -addr after reading a line on stdin")
	addr := flag.String("addr", "", "internal: listen address of the app")
	signal := flag.String("signal", "default", "internal: the loadshed signal of the app")
	iterations := flag.Int("iterations", 0, "internal: hash iterations of /work")
	spin := flag.Bool("spin", false, "internal: run GOMAXPROCS busy goroutines in the app")

	var p params
	signalList := flag.String("signals", strings.Join(bench.SignalNames, ","), "loadshed signals (columns), from: "+bench.SignalChoices())
	anchorList := flag.String("anchors", strings.Join(anchors, ","), "anchors (columns after the signals; empty: none), from: "+strings.Join(anchors, ","))
	envList := flag.String("envs", "root,unlimited,cpu-only,half", "environments (rows)")
	scenarioList := flag.String("scenarios", strings.Join(scenarios, ","), "scenarios (rows)")
	flag.DurationVar(&p.cell, "cell", 5*time.Second, "measured length of each cell (and of the quiet run of a starved cell)")
	flag.DurationVar(&p.settle, "settle", time.Second, "wait before each measurement, for the shedder to settle")
	flag.DurationVar(&p.onset, "onset", 2*time.Second, "starved: length of the overload's onset, summarised apart, before the measured cell (0: none)")
	flag.DurationVar(&p.timeout, "timeout", 5*time.Second, "client timeout of each request")
	flag.DurationVar(&p.work, "work", time.Millisecond, "CPU time of each request of the starved scenario")
	flag.Float64Var(&p.rate, "rate", 20, "requests per second of the idle and burning scenarios and of the quiet run")
	flag.Float64Var(&p.over, "over", 1.5, "starved: offered load as a multiple of what the starved app serves")
	flag.IntVar(&p.neighbours, "neighbours", runtime.NumCPU(), "busy-loop neighbour processes")
	flag.IntVar(&p.idleNice, "idle-nice", 0, "niceness of the neighbours of the idle scenario")
	flag.IntVar(&p.starveNice, "starve-nice", -5, "niceness of the neighbours of the starved scenario, so that the app gets clearly less CPU than it wants")
	flag.IntVar(&p.appNice, "app-nice", 0, "niceness of the app")
	driverNice := flag.Int("driver-nice", -10, "niceness of this driver, so that the neighbours do not starve the load generator")
	flag.Parse()
	gozero.DisableLogs() // go-zero's statistics, every minute, would land in the tables

	if *serve != "" {
		if err := runApp(*serve, *signal, *iterations, *spin, *addr); err != nil {
			log.Fatal(err)
		}
		return
	}
	envNames := make([]string, len(environments))
	for i, e := range environments {
		envNames[i] = e.name
	}
	var err error
	if p.signals, err = bench.ParseSignals(*signalList); err != nil {
		log.Fatal(err)
	}
	if p.columns, err = columns(p.signals, *anchorList); err != nil {
		log.Fatal(err)
	}
	if p.envs, err = scenario.ParseList(*envList, envNames); err != nil {
		log.Fatal(err)
	}
	if p.scenarios, err = scenario.ParseList(*scenarioList, scenarios); err != nil {
		log.Fatal(err)
	}
	if err := scenario.SetNice(os.Getpid(), *driverNice); err != nil {
		log.Fatal(err)
	}
	if err := drive(p); err != nil {
		log.Fatal(err)
	}
}

// runApp is the app process: loadshed with one signal, an anchor, or no shedding (also to measure what a starved
// app serves).
func runApp(mode, signal string, iterations int, spin bool, addr string) error {
	if err := scenario.AwaitStart(); err != nil {
		return err
	}
	spec := scenario.AppSpec{Iterations: iterations}
	switch mode { // each shedder is made after AwaitStart, so that it sees the app's groups
	case "plain":
	case "loadshed":
		sig, err := bench.Signal(signal)
		if err != nil {
			return err
		}
		s := loadshed.NewShedder(bench.FixedBand(signal, loadshed.Config{Signal: sig})) // fixed=P sheds with probability P
		defer func() { _ = s.Close() }()
		spec.Middleware, spec.Stats = s.Handler(), func() any { return s.Status() }
	case "failsafe":
		spec.Middleware = bench.FailsafeMiddleware(adaptivelimiter.NewWithDefaults[any]())
	case "gozero":
		spec.Middleware = gozero.Middleware(load.NewAdaptiveShedder())
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	if spin {
		scenario.Spin(runtime.GOMAXPROCS(0))
	}
	return scenario.NewApp(spec).Listen(addr) // the driver kills this process to stop it
}

// cell is one measurement.
type cell struct {
	// quiet and unloaded are the starved cell's references: the same app at the quiet run's rate, on a quiet
	// host and beside the neighbours that starve it.
	out, quiet, unloaded scenario.Outcome
	// onset is the starved cell's overload before out: how the app meets it, where out is how it holds up.
	onset   scenario.Outcome
	status  loadshedcore.Status
	appCPU  float64 // CPUs the app used during the measurement (a starved cell's onset included)
	hostCPU float64 // CPUs the whole host used during it (app, neighbours, driver and anyone else)
}

// envInfo is what the first app of an environment reports.
type envInfo struct {
	cpuGroup, cpuacctGroup string
	procs                  int
	starvedCap             float64
}

type driver struct {
	p          params
	clean      *scenario.Cleanup
	iterations int
	group      *scenario.Group // of the environment being measured; nil: none
}

func drive(p params) error {
	clean := &scenario.Cleanup{}
	defer clean.OnInterrupt()() // stops watching only after the cleanup below
	defer clean.Run()
	scenario.RemoveStale("fiberguard-environments", "cpu", "cpuacct")

	d := &driver{p: p, clean: clean, iterations: scenario.Calibrate(p.work)}
	log.Printf("calibrated %d hash iterations for %v of CPU per request", d.iterations, p.work)
	cells := map[string]cell{}
	infos := map[string]*envInfo{}
	for _, name := range p.envs {
		env := environmentNamed(name)
		info, err := d.measureEnv(env, cells)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		infos[name] = info
	}
	d.print(cells, infos)
	return nil
}

func environmentNamed(name string) environment {
	for _, e := range environments {
		if e.name == name {
			return e
		}
	}
	panic("unknown environment " + name) // parseList checked the names
}

func key(env, scen, signal string) string { return env + "/" + scen + "/" + signal }

func runs(env environment, scen string) bool { return scen != "starved" || env.cpus == 0 }

// measureEnv creates the environment's group, measures its cells and removes the group.
func (d *driver) measureEnv(env environment, cells map[string]cell) (*envInfo, error) {
	d.group = nil
	if len(env.controllers) > 0 {
		g, err := scenario.NewGroup(fmt.Sprintf("fiberguard-environments-%d-%s", os.Getpid(), env.name), env.cpus, env.controllers...)
		if err != nil {
			return nil, err
		}
		defer d.clean.Add(g.Remove)()
		d.group = g
	}
	info := &envInfo{}
	// The environment as the app sees it.
	if err := d.withApp("plain", "default", false, func(a *scenario.App) error {
		groups, err := a.Cgroups()
		if err != nil {
			return err
		}
		info.cpuGroup, info.cpuacctGroup = groups["cpu"], groups["cpuacct"]
		return a.GetJSON("/procs", &info.procs)
	}); err != nil {
		return nil, err
	}
	if slices.Contains(d.p.scenarios, "starved") && runs(env, "starved") {
		if err := d.withNeighbours(d.p.starveNice, func() error {
			return d.withApp("plain", "default", false, func(a *scenario.App) error {
				info.starvedCap = scenario.Capacity(a.Base+"/work", 3*time.Second)
				return nil
			})
		}); err != nil {
			return nil, err
		}
		log.Printf("%s: the starved app serves %.0f req/s", env.name, info.starvedCap)
	}
	for _, scen := range d.p.scenarios {
		if !runs(env, scen) {
			continue
		}
		for _, col := range d.p.columns {
			c, err := d.measureCell(scen, col, info.starvedCap)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", scen, col, err)
			}
			log.Printf("%s / %s / %s: shed %s, %+v, load %.2f, app CPU %.2f", env.name, scen, col,
				scenario.Pct(c.out.ShedFrac()), c.out, c.status.Load, c.appCPU)
			cells[key(env.name, scen, col.String())] = c
		}
	}
	return info, nil
}

func (d *driver) measureCell(scen string, col column, starvedCap float64) (cell, error) {
	var c cell
	// measure drives the app at rate for the cell, after warm at the same rate (summarised apart as the onset).
	measure := func(a *scenario.App, path string, rate float64, warm time.Duration) error {
		time.Sleep(d.p.settle)
		cpu0, err := a.CPUTime()
		if err != nil {
			return err
		}
		host0, err := scenario.HostBusy()
		if err != nil {
			return err
		}
		t0 := time.Now()
		c.onset, c.out = scenario.AttackAfter(a.Base+path, rate, warm, d.p.cell, d.p.timeout)
		cpu1, err := a.CPUTime()
		if err != nil {
			return err
		}
		host1, err := scenario.HostBusy()
		if err != nil {
			return err
		}
		wall := time.Since(t0).Seconds()
		c.appCPU, c.hostCPU = (cpu1-cpu0).Seconds()/wall, (host1-host0).Seconds()/wall
		if col.mode != "loadshed" {
			return nil // an anchor reports nothing of its own
		}
		return a.GetJSON("/stats", &c.status)
	}
	switch scen {
	case "idle":
		return c, d.withNeighbours(d.p.idleNice, func() error {
			return d.withApp(col.mode, col.signal, false, func(a *scenario.App) error { return measure(a, "/ok", d.p.rate, 0) })
		})
	case "burning":
		return c, d.withApp(col.mode, col.signal, true, func(a *scenario.App) error { return measure(a, "/ok", d.p.rate, 0) })
	case "starved":
		if starvedCap < 1 {
			return c, fmt.Errorf("the starved app served %.1f req/s", starvedCap)
		}
		return c, d.withApp(col.mode, col.signal, false, func(a *scenario.App) error {
			time.Sleep(d.p.settle)
			c.quiet = scenario.Attack(a.Base+"/work", d.p.rate, d.p.cell, d.p.timeout)
			return d.withNeighbours(d.p.starveNice, func() error {
				time.Sleep(d.p.settle)
				c.unloaded = scenario.Attack(a.Base+"/work", d.p.rate, d.p.cell, d.p.timeout)
				return measure(a, "/work", d.p.over*starvedCap, d.p.onset)
			})
		})
	}
	return c, fmt.Errorf("unknown scenario %q", scen)
}

// withApp runs f against a fresh app in the environment.
func (d *driver) withApp(mode, sig string, spin bool, f func(*scenario.App) error) error {
	args := []string{"-serve", mode, "-signal", sig, "-iterations", strconv.Itoa(d.iterations)}
	if spin {
		args = append(args, "-spin")
	}
	o := scenario.AppOptions{Args: args, Nice: d.p.appNice}
	if d.group != nil {
		o.Groups = []*scenario.Group{d.group}
	}
	a, err := scenario.StartApp(o)
	if err != nil {
		return err
	}
	defer d.clean.Add(a.Stop)()
	return f(a)
}

// withNeighbours runs f while the neighbours burn CPU, at a niceness, in the driver's groups.
func (d *driver) withNeighbours(nice int, f func() error) error {
	nb, err := scenario.StartNeighbours(d.p.neighbours, nice)
	if err != nil {
		return err
	}
	defer d.clean.Add(nb.Stop)()
	return f()
}

var goals = map[string]string{
	"idle":    "≤ 1 % (≤ 5 % at 0.5 CPU)",
	"burning": "≥ 80 %",
	"starved": "sheds ≥ 5 %, p99 ≤ 5× unloaded",
}

// met says whether a cell reaches its scenario's goal.
func met(env environment, scen string, c cell) bool {
	shed := c.out.ShedFrac()
	switch scen {
	case "idle":
		if env.cpus > 0 && env.cpus < 1 {
			return shed <= 0.05
		}
		return shed <= 0.01
	case "burning":
		return shed >= 0.8
	case "starved":
		return shed >= 0.05 && c.unloaded.P99 > 0 && c.out.P99 > 0 && c.out.P99 <= 5*c.unloaded.P99
	}
	return false
}

func (d *driver) print(cells map[string]cell, infos map[string]*envInfo) {
	p := d.p
	fmt.Printf("Environments (%d CPUs; %d busy-loop neighbours at nice %d when idle, %d when starved; app at nice %d; cells of %v after %v):\n\n",
		runtime.NumCPU(), p.neighbours, p.idleNice, p.starveNice, p.appNice, p.cell, p.settle)
	fmt.Printf("| environment | what | app cpu group | app cpuacct group | app GOMAXPROCS | starved app serves |\n")
	fmt.Printf("|---|---|---|---|---:|---:|\n")
	for _, name := range p.envs {
		env, info := environmentNamed(name), infos[name]
		starved := "–"
		if info.starvedCap > 0 {
			starved = fmt.Sprintf("%.0f req/s", info.starvedCap)
		}
		fmt.Printf("| %s | %s | %s | %s | %d | %s |\n", name, env.desc, info.cpuGroup, info.cpuacctGroup, info.procs, starved)
	}

	fmt.Printf("\nShed fraction (✓: goal met); starved: shed · admitted p99 (× the same app's p99 at %.0f req/s beside the same neighbours, its unloaded p99; × its p99 at that rate on a quiet host), after the overload's first %v; then that onset's shed · admitted p99:\n\n", p.rate, p.onset)
	fmt.Printf("| environment | scenario | goal |")
	for _, col := range p.columns {
		fmt.Printf(" %s |", col)
	}
	fmt.Printf("\n|---|---|---|%s\n", strings.Repeat("---:|", len(p.columns)))
	for _, name := range p.envs {
		env := environmentNamed(name)
		for _, scen := range p.scenarios {
			if !runs(env, scen) {
				continue
			}
			fmt.Printf("| %s | %s | %s |", name, scenarioDesc[scen], goals[scen])
			for _, col := range p.columns {
				fmt.Printf(" %s |", cellText(env, scen, cells[key(name, scen, col.String())]))
			}
			fmt.Println()
		}
	}

	fmt.Printf("\nWhat loadshed reports (GET /stats at the end of each cell; an anchor reports nothing), and the CPU the app and the whole host used during it:\n\n")
	fmt.Printf("| environment | scenario | signal | Status.Signal | Status.Load | app CPU (cores) | host CPU (cores) | offered req/s |\n")
	fmt.Printf("|---|---|---|---|---:|---:|---:|---:|\n")
	for _, name := range p.envs {
		env := environmentNamed(name)
		for _, scen := range p.scenarios {
			if !runs(env, scen) {
				continue
			}
			for _, col := range p.columns {
				c := cells[key(name, scen, col.String())]
				signal, load := "–", "–"
				if col.mode == "loadshed" {
					signal, load = strings.ReplaceAll(c.status.Signal, "|", `\|`), fmt.Sprintf("%.2f", c.status.Load)
				}
				fmt.Printf("| %s | %s | %s | %s | %s | %.2f | %.2f | %.0f |\n", name, scen, col, signal, load, c.appCPU,
					c.hostCPU, c.out.Offered)
			}
		}
	}
}

func cellText(env environment, scen string, c cell) string {
	s := scenario.Pct(c.out.ShedFrac())
	if scen == "starved" {
		ratio := func(ref scenario.Outcome) string {
			if ref.P99 <= 0 {
				return "–"
			}
			return fmt.Sprintf("%.1f×", float64(c.out.P99)/float64(ref.P99))
		}
		s += fmt.Sprintf(" · %s (%s unloaded, %s quiet)", scenario.Ms(c.out.P99), ratio(c.unloaded), ratio(c.quiet))
		if c.onset.Total > 0 {
			s += fmt.Sprintf("; onset %s · %s", scenario.Pct(c.onset.ShedFrac()), scenario.Ms(c.onset.P99))
		}
	}
	if failed := c.out.TimeoutFrac() + c.out.ErrFrac(); failed > 0 {
		s += " · " + scenario.Pct(failed) + " failed"
	}
	if met(env, scen, c) {
		s += " ✓"
	}
	return s
}
