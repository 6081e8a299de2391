package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fiberguard/fiberguard/bench"
	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// modes are the apps compared in every cell, in table order.
var modes = []string{"plain", "failsafe", "gozero", "loadshed", "loadshed-cpu"}

// signalModePrefix names a loadshed app with one of bench's signals (bench.Signal) in place of its default:
// "loadshed:cpu" is "loadshed-cpu", and "loadshed:fixed=0.55" rejects each request with probability 0.55 whatever
// the load, the oracle of a shedder that knows the overload exactly. They run only when -modes names them.
const signalModePrefix = "loadshed:"

// modeKind is the app a mode runs: its name, or "loadshed" for a "loadshed:NAME" mode.
func modeKind(mode string) string {
	if strings.HasPrefix(mode, signalModePrefix) {
		return "loadshed"
	}
	return mode
}

// frameworks are what the apps are built on: Fiber v2 (fasthttp), or the standard library's net/http.
var frameworks = []string{"fiber", "nethttp"}

// handlers are what GET /work does.
var handlers = []string{"cpu", "mixed", "wait"}

// params is what a run measures.
type params struct {
	framework   string // of every app: one of frameworks
	quotas      []quota
	procs       []string // "default" or a positive integer
	loads       []float64
	handlers    []string
	modes       []string
	step        bool
	neighbours  bool
	goals       bool
	duration    time.Duration
	warm        time.Duration // a loaded run's onset, reported apart from its steady part
	timeout     time.Duration
	capacityRun time.Duration // the closed loop that measures a cell's capacity
	out         string
}

// quota is a cell's CPU limit: cpus CPUs, or none (0).
type quota struct {
	name string
	cpus float64
}

// parseFlags reads the command's flags (not the app's -serve ones).
func parseFlags(args []string, stderr io.Writer) (params, error) {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quotaList := fs.String("quotas", "0.5,1,2,none", "CPU quotas of the app's cgroup-v1 group, in CPUs, or none (a group with no limit)")
	procList := fs.String("gomaxprocs", "default,1", "GOMAXPROCS of the app: default (what Go chooses in its group) or an integer")
	loadList := fs.String("loads", "0.8,1.2,2,4,10", "offered loads as multiples of each cell's capacity")
	handlerList := fs.String("handlers", "cpu", "what GET /work does: "+strings.Join(handlers, ","))
	modeList := fs.String("modes", strings.Join(modes, ","), "apps compared: "+strings.Join(modes, ",")+", or "+signalModePrefix+"SIGNAL: loadshed with a signal of "+bench.SignalChoices()+" (fixed=P sheds with probability P)")
	var p params
	fs.StringVar(&p.framework, "framework", "fiber", "the apps' framework, the same for every mode: fiber (Fiber v2) or nethttp (net/http, loadshed through nethttp/loadshed)")
	fs.BoolVar(&p.step, "step", false, "also run a step per cell: 5 s at 0.25x capacity, then 5 s at 3x")
	fs.BoolVar(&p.neighbours, "neighbours", false, "also run the app with no limit beside one busy loop per CPU: idle (20 req/s) and starved (2x what it serves beside them)")
	fs.BoolVar(&p.goals, "goals", true, "append to each loadshed row the goals it misses")
	fs.DurationVar(&p.duration, "duration", 10*time.Second, "length of each run (and of each cell's unloaded reference)")
	fs.DurationVar(&p.warm, "warm", 2*time.Second, "the onset of each loaded run, before the part its p99, goodput and shed are measured over (its timeouts count too)")
	fs.DurationVar(&p.timeout, "timeout", 2*time.Second, "client timeout of each request")
	fs.DurationVar(&p.capacityRun, "capacity-run", 5*time.Second, "length of the closed loop that measures each cell's capacity")
	fs.StringVar(&p.out, "out", "", "TSV file of the raw rows (default results/matrix-<UTC timestamp>.tsv)")
	if err := fs.Parse(args); err != nil {
		return params{}, err
	}
	if fs.NArg() > 0 {
		return params{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !slices.Contains(frameworks, p.framework) {
		return params{}, fmt.Errorf("-framework: unknown %q (one of %s)", p.framework, strings.Join(frameworks, ","))
	}
	var err error
	if p.quotas, err = parseQuotas(*quotaList); err != nil {
		return params{}, fmt.Errorf("-quotas: %w", err)
	}
	if p.procs, err = parseProcs(*procList); err != nil {
		return params{}, fmt.Errorf("-gomaxprocs: %w", err)
	}
	if p.loads, err = parseLoads(*loadList); err != nil {
		return params{}, fmt.Errorf("-loads: %w", err)
	}
	if p.handlers, err = parseNames(*handlerList, handlers); err != nil {
		return params{}, fmt.Errorf("-handlers: %w", err)
	}
	if p.modes, err = parseModes(*modeList); err != nil {
		return params{}, fmt.Errorf("-modes: %w", err)
	}
	for name, d := range map[string]time.Duration{"-duration": p.duration, "-timeout": p.timeout, "-capacity-run": p.capacityRun} {
		if d <= 0 {
			return params{}, fmt.Errorf("%s: must be positive, got %v", name, d)
		}
	}
	if p.warm < 0 {
		return params{}, fmt.Errorf("-warm: must not be negative, got %v", p.warm)
	}
	if p.out == "" {
		// The TSV's columns are the same for every framework: the file's name says which one it holds.
		prefix := "matrix-"
		if p.framework != "fiber" {
			prefix += p.framework + "-"
		}
		p.out = filepath.Join("results", prefix+time.Now().UTC().Format("20060102T150405Z")+".tsv")
	}
	return p, nil
}

// items splits a comma-separated list, rejecting an empty list and repeats.
func items(list string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("%q given twice", s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func parseNames(list string, known []string) ([]string, error) {
	if _, err := items(list); err != nil {
		return nil, err
	}
	return scenario.ParseList(list, known)
}

// parseModes reads -modes: names of modes, and "loadshed:NAME" with a signal bench.Signal knows.
func parseModes(list string) ([]string, error) {
	names, err := items(list)
	if err != nil {
		return nil, err
	}
	for _, m := range names {
		if sig, ok := strings.CutPrefix(m, signalModePrefix); ok {
			if sig == "" {
				return nil, fmt.Errorf("%q names no signal (one of %s)", m, bench.SignalChoices())
			}
			if _, err := bench.Signal(sig); err != nil {
				return nil, fmt.Errorf("%q: %w", m, err)
			}
		} else if !slices.Contains(modes, m) {
			return nil, fmt.Errorf("unknown %q (one of %s, or %sSIGNAL with a signal of %s)", m,
				strings.Join(modes, ","), signalModePrefix, bench.SignalChoices())
		}
	}
	return names, nil
}

func parseQuotas(list string) ([]quota, error) {
	names, err := items(list)
	if err != nil {
		return nil, err
	}
	var out []quota
	for _, s := range names {
		if s == "none" {
			out = append(out, quota{name: s})
			continue
		}
		cpus, err := strconv.ParseFloat(s, 64)
		if err != nil || !(cpus >= 0.01) || cpus > 1024 {
			return nil, fmt.Errorf("%q is neither none nor a number of CPUs in [0.01, 1024]", s)
		}
		out = append(out, quota{name: s, cpus: cpus})
	}
	return out, nil
}

func parseProcs(list string) ([]string, error) {
	names, err := items(list)
	if err != nil {
		return nil, err
	}
	for _, s := range names {
		if n, err := strconv.Atoi(s); s != "default" && (err != nil || n < 1) {
			return nil, fmt.Errorf("%q is neither default nor a positive integer", s)
		}
	}
	return names, nil
}

func parseLoads(list string) ([]float64, error) {
	names, err := items(list)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, s := range names {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0) || f > 1000 {
			return nil, fmt.Errorf("%q is not a multiple of capacity in (0, 1000]", s)
		}
		out = append(out, f)
	}
	return out, nil
}
