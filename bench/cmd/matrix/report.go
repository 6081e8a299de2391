package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// print writes the capacities, the rows and the steps as Markdown tables.
func (d *driver) print(w io.Writer) {
	fmt.Fprintf(w, "Cells (capacity: no shedding, closed loop, 16 clients, %v; the wait handler's is nominal, %.0f req/s per CPU it may use; unloaded: no shedding at ¼ capacity, or %.0f req/s beside the neighbours, %v):\n\n",
		d.p.capacityRun, waitRatePerCPU, idleRate, d.p.duration)
	fmt.Fprintf(w, "| cell | capacity req/s | app CPU / allowed (capacity run) | unloaded p50 | unloaded p99 |\n|---|---:|---:|---:|---:|\n")
	for _, c := range d.results {
		cpu := "–"
		if c.measured {
			cpu = fmt.Sprintf("%.2f", c.capCPU/c.allowed())
		}
		fmt.Fprintf(w, "| %v | %.0f | %s | %s | %s |\n", c.cell, c.capacity, cpu, scenario.Ms(c.unloaded.P50), scenario.Ms(c.unloaded.P99))
	}

	fmt.Fprintf(w, "\nEach loaded row is measured over %v after an onset of %v at the same rate (its timeouts are counted in the goals; the step rows show the onset itself). The app's CPU covers both.\n",
		d.p.duration, d.p.warm)
	fmt.Fprintf(w, "\n| cell | load × | mode | offered req/s | goodput req/s | goodput / capacity | shed | timeouts | errors | p50 | p99 | p99 / unloaded | CPU used / it can get | load generator CPU |%s\n",
		goalHeader(d.p.goals))
	fmt.Fprintf(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", goalRule(d.p.goals))
	for _, r := range d.rows {
		if r.load == loadStep {
			continue
		}
		fmt.Fprintf(w, "| %v | %s | %s | %.0f | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %.2f | %.2f |%s\n", r.cell, r.load, r.mode,
			r.o.Offered, r.o.Goodput, r.goodputFrac(), scenario.Pct(r.o.ShedFrac()), scenario.Pct(r.o.TimeoutFrac()),
			scenario.Pct(r.o.ErrFrac()), scenario.Ms(r.o.P50), scenario.Ms(r.o.P99), times(r.p99Ratio()), r.cpuFrac(), r.driverCPU, goalCell(d.p.goals, r))
	}
	if !d.p.step {
		return
	}
	fmt.Fprintf(w, "\nSteps (%v at %gx capacity, then %v at %gx, then %v at %gx; first 503: from the step to the answer of the first request sent after it that was shed; goodput to CPU: the %v after the step's first second; after the drop: the share shed of the requests sent in the first second at %gx, and the time from the drop to the answer of the last one shed):\n\n",
		stepBefore, stepLow, stepAfter, stepHigh, dropAfter, stepDrop, stepAfter-time.Second, stepDrop)
	fmt.Fprintf(w, "| cell | mode | first 503 | first-second p99 | / unloaded | goodput / capacity | shed | timeouts | p99 | p99 / unloaded | CPU used / it can get | shed after the drop | last 503 after it |%s\n", goalHeader(d.p.goals))
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", goalRule(d.p.goals))
	for _, r := range d.rows {
		if r.load != loadStep {
			continue
		}
		fmt.Fprintf(w, "| %v | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %.2f | %s | %s |%s\n", r.cell, r.mode, scenario.Ms(r.firstShed),
			scenario.Ms(r.stepP99), times(ratio(r.stepP99, r.unloadedP99)), r.goodputFrac(), scenario.Pct(r.o.ShedFrac()),
			scenario.Pct(r.o.TimeoutFrac()), scenario.Ms(r.o.P99), times(r.p99Ratio()), r.cpuFrac(), scenario.Pct(r.dropShed),
			scenario.Ms(r.lastShed), goalCell(d.p.goals, r))
	}
}

func goalHeader(on bool) string { return map[bool]string{true: " goals missed |"}[on] }
func goalRule(on bool) string   { return map[bool]string{true: "---|"}[on] }
func goalCell(on bool, r row) string {
	if !on {
		return ""
	}
	return " " + goalText(r) + " |"
}

// tsvColumns are the TSV file's columns, in order; tsvFields gives a row's values in the same order.
var tsvColumns = []string{"quota", "gomaxprocs", "handler", "neighbours", "load", "factor", "mode", "capacity_rps",
	"offered_rps", "goodput_rps", "goodput_per_capacity", "total", "ok", "shed", "timeouts", "errors", "shed_frac",
	"timeout_frac", "error_frac", "p50_ms", "p99_ms", "unloaded_p99_ms", "p99_ratio", "cpu_cores", "cpu_reach",
	"cpu_frac", "driver_cpu_cores", "first_shed_ms", "step_p99_ms", "drop_shed_frac", "drop_last_shed_ms", "onset_total", "onset_timeouts", "onset_p99_ms", "goals_missed"}

func tsvFields(r row) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	ms := func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return f(float64(d) / float64(time.Millisecond))
	}
	opt := func(v float64) string { // NaN: unknown
		if v != v {
			return ""
		}
		return f(v)
	}
	goals := goalText(r)
	return []string{r.quota.name, r.procs, r.handler, strconv.FormatBool(r.neighbours), r.load, f(r.factor), r.mode,
		f(r.capacity), f(r.o.Offered), f(r.o.Goodput), f(r.goodputFrac()), strconv.Itoa(r.o.Total), strconv.Itoa(r.o.OK),
		strconv.Itoa(r.o.Shed), strconv.Itoa(r.o.Timeouts), strconv.Itoa(r.o.Errors), f(r.o.ShedFrac()),
		f(r.o.TimeoutFrac()), f(r.o.ErrFrac()), ms(r.o.P50), ms(r.o.P99), ms(r.unloadedP99), opt(r.p99Ratio()),
		f(r.cpu), f(r.reach()), f(r.cpuFrac()), f(r.driverCPU), ms(r.firstShed), ms(r.stepP99), stepOnly(r, f(r.dropShed)), ms(r.lastShed), strconv.Itoa(r.onset.Total),
		strconv.Itoa(r.onset.Timeouts), ms(r.onset.P99), goals}
}

// stepOnly is v on a step's row, and empty on any other.
func stepOnly(r row, v string) string {
	if r.load != loadStep {
		return ""
	}
	return v
}

// tsvWriter writes rows as tab-separated lines under a header line.
type tsvWriter struct{ w io.Writer }

func newTSVWriter(w io.Writer) (*tsvWriter, error) {
	t := &tsvWriter{w}
	return t, t.line(tsvColumns)
}

func (t *tsvWriter) add(r row) error { return t.line(tsvFields(r)) }

func (t *tsvWriter) line(fields []string) error {
	clean := make([]string, len(fields))
	for i, s := range fields {
		clean[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
	}
	_, err := io.WriteString(t.w, strings.Join(clean, "\t")+"\n")
	return err
}
