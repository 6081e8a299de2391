package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	p, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []quota{{"0.5", 0.5}, {"1", 1}, {"2", 2}, {"none", 0}}
	if !slices.Equal(p.quotas, want) || !slices.Equal(p.procs, []string{"default", "1"}) ||
		!slices.Equal(p.loads, []float64{0.8, 1.2, 2, 4, 10}) || !slices.Equal(p.handlers, []string{"cpu"}) ||
		!slices.Equal(p.modes, modes) {
		t.Errorf("defaults: %+v", p)
	}
	if p.framework != "fiber" || p.duration != 10*time.Second || p.timeout != 2*time.Second || !p.goals || p.step || p.neighbours {
		t.Errorf("defaults: %+v", p)
	}
	if !strings.HasPrefix(p.out, "results/matrix-2") || !strings.HasSuffix(p.out, ".tsv") {
		t.Errorf("default -out %q", p.out)
	}
}

// TestParseFlagsFramework: net/http apps are marked in the cells' names and in the default TSV file's name (the
// columns are the same), Fiber's are not, so a Fiber run prints and writes what it did before net/http existed.
func TestParseFlagsFramework(t *testing.T) {
	for _, tc := range []struct{ framework, cell, out string }{
		{"fiber", "1 CPU · GOMAXPROCS 1 · cpu", "results/matrix-2"},
		{"nethttp", "1 CPU · GOMAXPROCS 1 · cpu · net/http", "results/matrix-nethttp-2"},
	} {
		p, err := parseFlags([]string{"-framework", tc.framework, "-quotas", "1", "-gomaxprocs", "1"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if p.framework != tc.framework || !strings.HasPrefix(p.out, tc.out) {
			t.Errorf("-framework %s: framework %q, -out %q", tc.framework, p.framework, p.out)
		}
		if cells := p.cells(); len(cells) != 1 || cells[0].framework != tc.framework || cells[0].String() != tc.cell {
			t.Errorf("-framework %s: cells %v, want [%s]", tc.framework, cells, tc.cell)
		}
	}
	p, err := parseFlags([]string{"-framework", "nethttp", "-quotas", "1", "-neighbours"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.cells() {
		if c.framework != "nethttp" {
			t.Errorf("cell %v: framework %q", c, c.framework)
		}
	}
}

func TestParseFlagsLists(t *testing.T) {
	p, err := parseFlags([]string{"-quotas", " none ,0.25", "-gomaxprocs", "3", "-loads", "1.5", "-handlers", "wait,mixed",
		"-modes", "loadshed-cpu", "-step", "-neighbours", "-goals=false", "-out", "x.tsv"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.quotas, []quota{{"none", 0}, {"0.25", 0.25}}) || !slices.Equal(p.procs, []string{"3"}) ||
		!slices.Equal(p.loads, []float64{1.5}) || !slices.Equal(p.handlers, []string{"wait", "mixed"}) ||
		!slices.Equal(p.modes, []string{"loadshed-cpu"}) || !p.step || !p.neighbours || p.goals || p.out != "x.tsv" {
		t.Errorf("got %+v", p)
	}
}

// TestParseFlagsSignalModes: a loadshed:NAME mode runs loadshed with bench's signal of that name, only when
// named, in the order given.
func TestParseFlagsSignalModes(t *testing.T) {
	p, err := parseFlags([]string{"-modes", "loadshed:fixed=0.55,plain,loadshed:cpu"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"loadshed:fixed=0.55", "plain", "loadshed:cpu"}; !slices.Equal(p.modes, want) {
		t.Errorf("modes %q, want %q", p.modes, want)
	}
	for mode, kind := range map[string]string{"loadshed:fixed=0.55": "loadshed", "loadshed:cpu": "loadshed",
		"loadshed-cpu": "loadshed-cpu", "plain": "plain"} {
		if got := modeKind(mode); got != kind {
			t.Errorf("modeKind(%q) = %q, want %q", mode, got, kind)
		}
	}
}

// TestParseFlagsRejects checks that a bad list is refused with a message that names its flag.
func TestParseFlagsRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-quotas", "1,abc"}, `-quotas: "abc" is neither none`},
		{[]string{"-quotas", "0"}, `-quotas: "0" is neither none`},
		{[]string{"-quotas", "-1"}, `-quotas: "-1"`},
		{[]string{"-quotas", ","}, "-quotas: empty list"},
		{[]string{"-quotas", "1,1"}, `-quotas: "1" given twice`},
		{[]string{"-gomaxprocs", "0"}, `-gomaxprocs: "0" is neither default nor a positive integer`},
		{[]string{"-gomaxprocs", "auto"}, `-gomaxprocs: "auto"`},
		{[]string{"-loads", "2,0"}, `-loads: "0" is not a multiple`},
		{[]string{"-loads", "x"}, `-loads: "x"`},
		{[]string{"-loads", ""}, "-loads: empty list"},
		{[]string{"-handlers", "cpu,io"}, `-handlers: unknown "io"`},
		{[]string{"-modes", "plain,bbr"}, `-modes: unknown "bbr"`},
		{[]string{"-modes", "plain,plain"}, `-modes: "plain" given twice`},
		{[]string{"-modes", "loadshed:bogus"}, `-modes: "loadshed:bogus"`},
		{[]string{"-modes", "loadshed:fixed=x"}, `-modes: "loadshed:fixed=x"`},
		{[]string{"-modes", "loadshed:"}, `-modes: "loadshed:"`},
		{[]string{"-duration", "0s"}, "-duration: must be positive"},
		{[]string{"-warm", "-1s"}, "-warm: must not be negative"},
		{[]string{"-timeout", "-1s"}, "-timeout: must be positive"},
		{[]string{"-framework", "gin"}, `-framework: unknown "gin"`},
		{[]string{"-framework", ""}, `-framework: unknown ""`},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestCellsAndPlan(t *testing.T) {
	p, err := parseFlags([]string{"-quotas", "1,none", "-gomaxprocs", "default", "-handlers", "cpu,wait", "-loads", "2",
		"-modes", "plain,loadshed", "-step", "-neighbours", "-duration", "3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	runs := 0
	var total time.Duration
	for _, c := range p.cells() {
		names = append(names, c.String())
		n, d := p.plan(c)
		runs, total = runs+n, total+d
	}
	want := []string{"1 CPU · GOMAXPROCS default · cpu", "1 CPU · GOMAXPROCS default · wait",
		"no limit · GOMAXPROCS default · cpu", "no limit · GOMAXPROCS default · wait",
		"no limit · GOMAXPROCS default · cpu · neighbours"} // no wait cell beside the neighbours
	if !slices.Equal(names, want) {
		t.Fatalf("cells %q, want %q", names, want)
	}
	// cpu cells: capacity, unloaded, 2 load rows, 2 steps; wait cells: unloaded, 2 load rows;
	// neighbours: capacity, unloaded, idle and starved for 2 modes.
	if wantRuns := 2*6 + 2*3 + 6; runs != wantRuns {
		t.Errorf("%d runs, want %d", runs, wantRuns)
	}
	// A loaded run is its 2 s onset (-warm) and then -duration.
	o, loaded := appOverhead, 5*time.Second
	cpuCell := (5*time.Second + o) + (3*time.Second + o) + 2*(loaded+o) + 2*(12*time.Second+o) // a step: 5 s low, 5 s high, 2 s after the drop
	waitCell := (3*time.Second + o) + 2*(loaded+o)
	nbCell := (5*time.Second + o) + (3*time.Second + o) + 4*(loaded+o)
	if want := 2*cpuCell + 2*waitCell + nbCell; total != want {
		t.Errorf("expected run time %v, want %v", total, want)
	}
}
