package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

const legend = "rejections are counted by the module in Fiberguard-Rejected-By; 503 other: a 503 without it;\n" +
	"dropped: due while -inflight requests were waiting, so not sent; latency counts from the instant a request was due\n"

// reporter prints the driver's counts once per interval: a redrawn frame on a terminal, else one line per route
// (for logs and scripts), and a summary at the end.
type reporter struct {
	out      io.Writer
	live     bool
	target   string
	duration time.Duration
	routes   []*routeStats
	inflight func() int

	start, last time.Time
	modules     []string // every module seen so far: the rejection columns, which never disappear
	drawn       bool     // a frame is on the screen
	buf         bytes.Buffer
}

func newReporter(out io.Writer, live bool, cfg config, d *driver, start time.Time) *reporter {
	return &reporter{
		out: out, live: live, target: cfg.target.String(), duration: cfg.duration,
		routes: d.routes, inflight: d.inflight, start: start, last: start,
	}
}

// tick takes every route's interval and prints it. interrupted says that sending has been stopped early.
func (r *reporter) tick(now time.Time, interrupted bool) {
	dt := now.Sub(r.last)
	r.last = now
	type row struct {
		s        *routeStats
		c        *counts
		inflight int64
	}
	rows := make([]row, len(r.routes))
	for i, s := range r.routes {
		c, inflight := s.takeInterval()
		rows[i] = row{s, c, inflight}
		r.addModules(c)
	}

	r.buf.Reset()
	if !r.live {
		t := now.Sub(r.start)
		for _, x := range rows {
			r.line(t, x.s.route, x.c, x.inflight)
		}
		_, _ = r.out.Write(r.buf.Bytes())
		return
	}

	elapsed := now.Sub(r.start)
	var state string
	switch n := r.inflight(); {
	case (interrupted || elapsed >= r.duration) && n == 0:
		state = "done"
	case interrupted:
		state = fmt.Sprintf("interrupted, waiting for %d answers", n)
	case elapsed >= r.duration:
		state = fmt.Sprintf("done sending, waiting for %d answers", n)
	default:
		state = fmt.Sprintf("sending, %d in flight", n)
	}
	fmt.Fprintf(&r.buf, "fiberguard load  %s  %s  %s / %s  %s\n\n", r.target,
		progressBar(elapsed, r.duration, 30), formatSpan(min(elapsed, r.duration).Round(time.Second)), formatSpan(r.duration),
		state)

	perSec := func(n int64) string { return formatPerSecond(n, dt) }
	counts := [][]string{append(append([]string{"last second", "target", "sent/s", "200/s"}, r.modules...),
		"503 other", "other", "errors", "timeouts", "dropped")}
	lat := [][]string{{"latency", "p50", "p90", "p99", "200s p50", "p90", "p99"}}
	for _, x := range rows {
		c := x.c
		cells := []string{x.s.path, formatRate(x.s.rate), perSec(c.sent), perSec(c.ok)}
		for _, m := range r.modules {
			cells = append(cells, perSec(c.rejected[m]))
		}
		cells = append(cells, perSec(c.unavailable), perSec(sum(c.statuses)), perSec(c.errors), perSec(c.timeouts),
			perSec(c.dropped))
		counts = append(counts, cells)
		lat = append(lat, latencyCells(x.s.path, c))
	}
	writeTable(&r.buf, counts)
	r.buf.WriteString("\n")
	writeTable(&r.buf, lat)
	r.buf.WriteString("\n" + legend)

	// Each frame is drawn from the top left of the screen, so that lines a narrow terminal wraps cannot throw
	// the redraw off: the first clears the screen, later ones clear each line's rest and what lies below.
	home := "\x1b[H\x1b[J"
	if r.drawn {
		home = "\x1b[H"
	}
	r.drawn = true
	frame := strings.ReplaceAll(r.buf.String(), "\n", "\x1b[K\n")
	_, _ = io.WriteString(r.out, home+frame+"\x1b[J")
}

// final reports the interval that ends with the run. On a terminal it redraws the frame (now "done"); as lines
// it prints nothing when the interval is empty: the run often ends just after a tick, and a second set of lines
// for the same instant, all zero, reads as a route that stopped.
func (r *reporter) final(now time.Time, interrupted bool) {
	if !r.live && !slices.ContainsFunc(r.routes, func(s *routeStats) bool { return !s.quiet() }) {
		return
	}
	r.tick(now, interrupted)
}

// line writes one route's interval as key=value pairs.
func (r *reporter) line(t time.Duration, rt route, c *counts, inflight int64) {
	b := &r.buf
	fmt.Fprintf(b, "t=%.1fs route=%s rate=%s sent=%d ok=%d", t.Seconds(), rt.path, formatRate(rt.rate), c.sent, c.ok)
	for _, m := range r.modules {
		fmt.Fprintf(b, " rejected.%s=%d", m, c.rejected[m])
	}
	fmt.Fprintf(b, " 503.other=%d status.other=%d errors=%d timeouts=%d dropped=%d inflight=%d",
		c.unavailable, sum(c.statuses), c.errors, c.timeouts, c.dropped, inflight)
	for _, q := range []struct {
		name string
		h    *histogram
	}{{"", &c.all}, {"ok.", &c.okOnly}} {
		fmt.Fprintf(b, " %sp50=%s %sp90=%s %sp99=%s", q.name, formatQuantile(q.h, 0.5), q.name,
			formatQuantile(q.h, 0.9), q.name, formatQuantile(q.h, 0.99))
	}
	b.WriteString("\n")
}

func (r *reporter) addModules(c *counts) {
	for m := range c.rejected {
		if !slices.Contains(r.modules, m) {
			r.modules = append(r.modules, m)
		}
	}
	// Alphabetical, the catch-all last.
	slices.SortFunc(r.modules, func(a, b string) int {
		return cmp.Or(cmp.Compare(b2i(a == otherKey), b2i(b == otherKey)), strings.Compare(a, b))
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// summary prints the whole run: sending is how long requests were sent, elapsed how long the run took, from
// the first send to the last answer.
func (r *reporter) summary(sending, elapsed time.Duration, interrupted bool) {
	var (
		b      = &r.buf
		totals = make([]*counts, len(r.routes))
		all    = newCounts()
	)
	b.Reset()
	for i, s := range r.routes {
		totals[i] = s.totals()
		r.addModules(totals[i])
		all.merge(totals[i])
	}
	how := "for " + formatSpan(r.duration)
	if interrupted {
		how = "interrupted"
	}
	fmt.Fprintf(b, "\nsummary: %s, %s, answers in by %s\n", r.target, how, formatSpan(elapsed))

	header := append(append([]string{"route", "target", "sent", "sent/s", "200", "200/s"}, r.modules...),
		"503 other", "other", "errors", "timeouts", "dropped")
	rows := [][]string{header}
	lat := [][]string{{"latency", "p50", "p90", "p99", "200s p50", "p90", "p99"}}
	add := func(name, target string, c *counts) {
		offered := c.sent + c.dropped
		share := func(n int64) string { return withShare(n, offered) }
		cells := []string{name, target, strconv.FormatInt(c.sent, 10), formatRatePer(c.sent, sending.Seconds()), share(c.ok),
			formatRatePer(c.ok, sending.Seconds())}
		for _, m := range r.modules {
			cells = append(cells, share(c.rejected[m]))
		}
		cells = append(cells, share(c.unavailable), share(sum(c.statuses)), share(c.errors), share(c.timeouts),
			share(c.dropped))
		rows = append(rows, cells)
		lat = append(lat, latencyCells(name, c))
	}
	var targetSum float64
	for i, s := range r.routes {
		add(s.path, formatRate(s.rate), totals[i])
		targetSum += s.rate
	}
	if len(r.routes) > 1 {
		add("all", formatRate(targetSum), all)
	}
	writeTable(b, rows)
	b.WriteString("\n")
	writeTable(b, lat)
	for i, s := range r.routes {
		if text := topCounts(totals[i].statuses, strconv.Itoa); text != "" {
			fmt.Fprintf(b, "other statuses %s: %s\n", s.path, text)
		}
		if text := topCounts(totals[i].errTexts, func(s string) string { return s }); text != "" {
			fmt.Fprintf(b, "errors %s: %s\n", s.path, text)
		}
	}
	b.WriteString("\n" + legend)
	_, _ = r.out.Write(b.Bytes())
}

// merge adds o to c (for the all-routes row).
func (c *counts) merge(o *counts) {
	c.sent += o.sent
	c.dropped += o.dropped
	c.ok += o.ok
	c.unavailable += o.unavailable
	c.timeouts += o.timeouts
	c.errors += o.errors
	for k, v := range o.rejected {
		c.rejected[k] += v
	}
	for k, v := range o.statuses {
		c.statuses[k] += v
	}
	for k, v := range o.errTexts {
		c.errTexts[k] += v
	}
	c.all.merge(&o.all)
	c.okOnly.merge(&o.okOnly)
}

func latencyCells(name string, c *counts) []string {
	return []string{name,
		formatQuantile(&c.all, 0.5), formatQuantile(&c.all, 0.9), formatQuantile(&c.all, 0.99),
		formatQuantile(&c.okOnly, 0.5), formatQuantile(&c.okOnly, 0.9), formatQuantile(&c.okOnly, 0.99)}
}

// topCounts lists a map's entries, most frequent first: "404 ×12, 500 ×3".
func topCounts[K comparable](m map[K]int64, name func(K) string) string {
	type kv struct {
		k string
		n int64
	}
	var list []kv
	for k, n := range m {
		list = append(list, kv{name(k), n})
	}
	slices.SortFunc(list, func(a, b kv) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.k, b.k)) })
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = fmt.Sprintf("%s ×%d", e.k, e.n)
	}
	return strings.Join(parts, ", ")
}

// writeTable aligns rows in columns: the first left, the others right.
func writeTable(w *bytes.Buffer, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i == 0 {
				line.WriteString(cell + pad)
			} else {
				line.WriteString("  " + pad + cell)
			}
		}
		w.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// progressBar draws elapsed out of total in width characters: [#####.....].
func progressBar(elapsed, total time.Duration, width int) string {
	done := 0
	if total > 0 {
		done = int(int64(width) * int64(min(max(elapsed, 0), total)) / int64(total))
	}
	return "[" + strings.Repeat("#", done) + strings.Repeat(".", width-done) + "]"
}

// formatSpan prints a run's length as a person writes it: 20s, 2.5s, 1m, 1m30s, 1h.
func formatSpan(d time.Duration) string {
	s := d.Round(100 * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// formatDuration prints three significant digits: 850ns, 85.2µs, 3.21ms, 1.20s.
func formatDuration(d time.Duration) string {
	unit, scale := "ns", 1.0
	switch {
	case d >= time.Second:
		unit, scale = "s", float64(time.Second)
	case d >= time.Millisecond:
		unit, scale = "ms", float64(time.Millisecond)
	case d >= time.Microsecond:
		unit, scale = "µs", float64(time.Microsecond)
	}
	v := float64(d) / scale
	digits := 0
	switch {
	case unit == "ns":
	case v < 10:
		digits = 2
	case v < 100:
		digits = 1
	}
	return strconv.FormatFloat(v, 'f', digits, 64) + unit
}

func formatQuantile(h *histogram, q float64) string {
	v, ok := h.quantile(q)
	if !ok {
		return "-"
	}
	return formatDuration(v)
}

// formatPerSecond prints n events over dt as a rate.
func formatPerSecond(n int64, dt time.Duration) string {
	if dt <= 0 {
		return strconv.FormatInt(n, 10)
	}
	return formatRatePer(n, dt.Seconds())
}

func formatRatePer(n int64, seconds float64) string {
	if seconds <= 0 {
		return "-"
	}
	v := float64(n) / seconds
	if v > 0 && v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// withShare prints n with its share of total: "8200 (68%)"; a share above 0 never rounds to 0%.
func withShare(n, total int64) string {
	if n == 0 || total == 0 {
		return strconv.FormatInt(n, 10)
	}
	pct := (n*100 + total/2) / total
	if pct == 0 {
		return fmt.Sprintf("%d (<1%%)", n)
	}
	return fmt.Sprintf("%d (%d%%)", n, pct)
}
