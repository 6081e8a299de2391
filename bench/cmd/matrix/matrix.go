package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// Row kinds besides a load factor.
const (
	loadStep    = "step"    // 0.25x capacity, then 3x, then 0.5x
	loadIdle    = "idle"    // beside the neighbours, idleRate req/s
	loadStarved = "starved" // beside the neighbours, starvedOver x what the app serves there
)

const (
	settle      = time.Second // an idle app before each measurement, for the samplers to settle
	appOverhead = 1500 * time.Millisecond
	stepLow     = 0.25 // of capacity, for stepBefore
	stepHigh    = 3.0  // of capacity, for stepAfter
	stepBefore  = 5 * time.Second
	stepAfter   = 5 * time.Second
	stepDrop    = 0.5 // of capacity, for dropAfter: the overload is over
	dropAfter   = 2 * time.Second
	idleRate    = 20.0
	starvedOver = 2.0
	// waitRatePerCPU is the wait handler's nominal capacity per CPU: one request in flight per CPU on average
	// (Little's law: 1 / 20 ms). It is not a limit of the app, which waits rather than computes.
	waitRatePerCPU = float64(time.Second / waitSleep)
)

// cell is where the app runs and what it serves.
type cell struct {
	framework  string // of every app of the cell
	quota      quota
	procs      string // GOMAXPROCS: "default" or an integer
	handler    string
	neighbours bool // with no limit, beside one busy loop per CPU
}

func (c cell) String() string {
	q := "no limit"
	if c.quota.cpus > 0 {
		q = c.quota.name + " CPU"
	}
	s := fmt.Sprintf("%s · GOMAXPROCS %s · %s", q, c.procs, c.handler)
	if c.neighbours {
		s += " · neighbours"
	}
	if c.framework == "nethttp" {
		s += " · net/http"
	}
	return s
}

// allowed is the CPU the app may use: its quota, or the host's CPUs, and no more than a GOMAXPROCS set.
func (c cell) allowed() float64 {
	a := float64(runtime.NumCPU())
	if c.quota.cpus > 0 {
		a = min(a, c.quota.cpus)
	}
	if n, err := strconv.Atoi(c.procs); err == nil && n > 0 {
		a = min(a, float64(n))
	}
	return a
}

// cpuBound says whether the handler's capacity is its CPU (cpu, mixed), not its waiting (wait).
func (c cell) cpuBound() bool { return c.handler != "wait" }

// cells lists the cells of a run: quota × GOMAXPROCS × handler, then with -neighbours the GOMAXPROCS × CPU-bound
// handler cells beside the neighbours.
func (p params) cells() []cell {
	var out []cell
	for _, q := range p.quotas {
		for _, procs := range p.procs {
			for _, h := range p.handlers {
				out = append(out, cell{framework: p.framework, quota: q, procs: procs, handler: h})
			}
		}
	}
	if p.neighbours {
		for _, procs := range p.procs {
			for _, h := range p.handlers {
				if c := (cell{framework: p.framework, quota: quota{name: "none"}, procs: procs, handler: h, neighbours: true}); c.cpuBound() {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// plan is the runs of a cell, each with the time it is expected to take.
func (p params) plan(c cell) (runs int, expected time.Duration) {
	add := func(n int, d time.Duration) {
		runs += n
		expected += time.Duration(n) * (d + appOverhead)
	}
	if c.cpuBound() {
		add(1, p.capacityRun)
	}
	add(1, p.duration) // the unloaded reference
	switch {
	case c.neighbours:
		add(2*len(p.modes), p.warm+p.duration)
	default:
		add(len(p.loads)*len(p.modes), p.warm+p.duration)
		if p.step && c.cpuBound() {
			add(len(p.modes), stepBefore+stepAfter+dropAfter)
		}
	}
	return runs, expected
}

// cellResult is what a cell measured before its rows.
type cellResult struct {
	cell
	capacity float64 // req/s
	measured bool    // capacity measured closed loop (else nominal: the wait handler)
	capCPU   float64 // cores the app used in the capacity run
	unloaded scenario.Outcome
}

// row is one run: a mode at one load of a cell.
type row struct {
	cell
	load     string  // the factor ("0.8"), or loadStep, loadIdle, loadStarved
	factor   float64 // offered / capacity (a step: after the step)
	mode     string
	capacity float64
	o        scenario.Outcome // after the onset; a step: the part after its first second
	onset    scenario.Outcome // a loaded run's first -warm
	// unloadedP99 is the cell's reference: no shedding at ¼ capacity (beside the neighbours: at idleRate).
	unloadedP99 time.Duration
	cpu         float64       // cores the app used while the load ran
	driverCPU   float64       // cores the load generator used meanwhile
	capCPU      float64       // cores it used in the cell's capacity run (0: not measured)
	firstShed   time.Duration // a step: from the step to the end of the first 503 of a request sent after it
	stepP99     time.Duration // a step: admitted p99 of the requests sent in its first second
	// dropShed is a step's share of the requests sent in the first second after the load fell back to stepDrop
	// that were shed, and lastShed the time from that fall to the answer of the last of them shed (0: none).
	dropShed float64
	lastShed time.Duration
	judged   bool // goals apply (a loadshed row, with -goals)
	missed   []string
}

// driver runs the cells.
type driver struct {
	p       params
	clean   *scenario.Cleanup
	perMs   int // hash iterations per ms of CPU
	tsv     *tsvWriter
	group   *scenario.Group // of the cell being measured
	seq     int
	began   time.Time
	done    int
	total   int
	ahead   time.Duration // expected time of the runs not yet done
	results []cellResult
	rows    []row
	// driverCPU is the cores this process (the load generator) used during the last measurement.
	driverCPU float64
}

// run measures every cell, writes the rows to p.out as they come and prints the tables on stdout.
func run(p params, stdout io.Writer) error {
	if err := scenario.CheckCgroupV1(); err != nil {
		return fmt.Errorf("matrix needs root and the cgroup v1 cpu and cpuacct controllers: %w", err)
	}
	// The neighbours must not starve the load generator: this driver runs above them, the apps at 0.
	if err := scenario.SetNice(os.Getpid(), -10); err != nil {
		return err
	}
	clean := &scenario.Cleanup{}
	defer clean.OnInterrupt()() // stops watching only after the cleanup below
	defer clean.Run()
	scenario.RemoveStale("fiberguard-matrix", "cpu", "cpuacct")

	if err := os.MkdirAll(filepath.Dir(p.out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p.out)
	if err != nil {
		return err
	}
	defer f.Close()
	tsv, err := newTSVWriter(f)
	if err != nil {
		return err
	}
	d := &driver{p: p, clean: clean, tsv: tsv, began: time.Now(), perMs: scenario.Calibrate(time.Millisecond)}
	cells := p.cells()
	for _, c := range cells {
		n, e := p.plan(c)
		d.total, d.ahead = d.total+n, d.ahead+e
	}
	log.Printf("%d cells, %d runs: expected run time about %v (plus up to -timeout %v per run where a backlog drains); rows to %s",
		len(cells), d.total, d.ahead.Round(time.Second), p.timeout, p.out)
	log.Printf("calibrated %d hash iterations per ms of CPU", d.perMs)
	for _, c := range cells {
		if err := d.runCell(c); err != nil {
			return fmt.Errorf("%v: %w", c, err)
		}
	}
	d.print(stdout)
	log.Printf("done in %v; rows in %s", time.Since(d.began).Round(time.Second), p.out)
	return f.Close()
}

// runCell measures one cell in a group of its own: its capacity (no shedding, closed loop), its unloaded
// reference, then every mode at every load.
func (d *driver) runCell(c cell) error {
	d.seq++
	g, err := scenario.NewGroup(fmt.Sprintf("fiberguard-matrix-%d-%d", os.Getpid(), d.seq), c.quota.cpus, "cpu", "cpuacct")
	if err != nil {
		return err
	}
	defer d.clean.Add(g.Remove)()
	d.group = g
	if c.neighbours {
		nb, err := scenario.StartNeighbours(runtime.NumCPU(), 0)
		if err != nil {
			return err
		}
		defer d.clean.Add(nb.Stop)()
	}

	res := cellResult{cell: c, capacity: c.allowed() * waitRatePerCPU}
	if c.cpuBound() {
		res.measured = true
		if res.capCPU, err = d.measure(c, "plain", "capacity", func(base string) scenario.Outcome {
			res.capacity = scenario.Capacity(base+"/work", d.p.capacityRun)
			return scenario.Outcome{}
		}, d.p.capacityRun); err != nil {
			return err
		}
	}
	if !(res.capacity >= 1) {
		return fmt.Errorf("capacity %.1f req/s: the app serves nothing", res.capacity)
	}
	log.Printf("%v: capacity %.0f req/s (× %v of CPU per request: %.2f of the CPU it may use)", c, res.capacity,
		meanWork(c.handler), res.capacity*meanWork(c.handler).Seconds()/c.allowed())
	refRate := res.capacity / 4
	if c.neighbours {
		refRate = idleRate
	}
	if _, err := d.measure(c, "plain", "unloaded", func(base string) scenario.Outcome {
		res.unloaded = scenario.Attack(base+"/work", refRate, d.p.duration, d.p.timeout)
		return res.unloaded
	}, d.p.duration); err != nil {
		return err
	}
	d.results = append(d.results, res)

	type load struct {
		name   string
		factor float64
	}
	var loads []load
	if c.neighbours {
		loads = []load{{loadIdle, idleRate / res.capacity}, {loadStarved, starvedOver}}
	} else {
		for _, f := range d.p.loads {
			loads = append(loads, load{strconv.FormatFloat(f, 'g', -1, 64), f})
		}
	}
	for _, l := range loads {
		for _, mode := range d.p.modes {
			r := row{cell: c, load: l.name, factor: l.factor, mode: mode, capacity: res.capacity, unloadedP99: res.unloaded.P99,
				capCPU: res.capCPU}
			rate := l.factor * res.capacity
			what := l.name
			if !c.neighbours {
				what += "x"
			}
			if r.cpu, err = d.measure(c, mode, what, func(base string) scenario.Outcome {
				r.onset, r.o = scenario.AttackAfter(base+"/work", rate, d.p.warm, d.p.duration, d.p.timeout)
				return r.o
			}, d.p.warm+d.p.duration); err != nil {
				return err
			}
			r.driverCPU = d.driverCPU
			if err := d.add(r); err != nil {
				return err
			}
		}
	}
	if !d.p.step || c.neighbours || !c.cpuBound() {
		return nil
	}
	for _, mode := range d.p.modes {
		r := row{cell: c, load: loadStep, factor: stepHigh, mode: mode, capacity: res.capacity, unloadedP99: res.unloaded.P99,
			capCPU: res.capCPU}
		if r.cpu, err = d.measure(c, mode, loadStep, func(base string) scenario.Outcome {
			high := stepHigh * res.capacity
			drop := stepDrop * res.capacity
			parts := scenario.AttackSteps(base+"/work", []scenario.Step{{Rate: stepLow * res.capacity, D: stepBefore},
				{Rate: high, D: time.Second}, {Rate: high, D: stepAfter - time.Second},
				{Rate: drop, D: time.Second}, {Rate: drop, D: dropAfter - time.Second}}, d.p.timeout)
			r.o, r.stepP99, r.firstShed = parts[2], parts[1].P99, parts[1].FirstShed
			if r.firstShed == 0 && parts[2].FirstShed > 0 {
				r.firstShed = time.Second + parts[2].FirstShed
			}
			r.dropShed, r.lastShed = parts[3].ShedFrac(), parts[3].LastShed
			if parts[4].LastShed > 0 {
				r.lastShed = time.Second + parts[4].LastShed
			}
			return r.o
		}, stepBefore+stepAfter+dropAfter); err != nil {
			return err
		}
		r.driverCPU = d.driverCPU
		if err := d.add(r); err != nil {
			return err
		}
	}
	return nil
}

// measure starts the app of a mode in the cell's group, lets it settle idle, runs f against it and returns the
// cores the app used meanwhile. expected is f's planned length, for the progress line.
func (d *driver) measure(c cell, mode, what string, f func(base string) scenario.Outcome, expected time.Duration) (float64, error) {
	d.done++
	log.Printf("[%d/%d, %v in, ~%v left] %v: %s, %s", d.done, d.total, time.Since(d.began).Round(time.Second),
		d.ahead.Round(time.Second), c, what, mode)
	d.ahead -= expected + appOverhead
	a, err := scenario.StartApp(scenario.AppOptions{
		Args:   appArgs(c.framework, mode, c.handler, c.procs, d.perMs),
		Groups: []*scenario.Group{d.group},
		Nice:   0, // whatever this driver's
	})
	if err != nil {
		return 0, err
	}
	defer d.clean.Add(a.Stop)()
	time.Sleep(settle)
	var o scenario.Outcome
	own0 := ownCPU()
	cpu, wall, err := a.CPUDuring(func() { o = f(a.Base) })
	if err != nil {
		return 0, err
	}
	d.driverCPU = (ownCPU() - own0).Seconds() / wall.Seconds()
	if o.Total > 0 {
		log.Printf("  %+v; app CPU %.2f, load generator CPU %.2f", o, cpu.Seconds()/wall.Seconds(), d.driverCPU)
	}
	return cpu.Seconds() / wall.Seconds(), nil
}

// ownCPU is this process's CPU time: the load generator's, beside the app on the same CPUs.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// add judges a row, keeps it and writes it to the TSV file at once, so that an interrupted run keeps its rows.
func (d *driver) add(r row) error {
	if d.p.goals && judged(r) {
		r.judged, r.missed = true, missedGoals(r)
	}
	d.rows = append(d.rows, r)
	return d.tsv.add(r)
}
