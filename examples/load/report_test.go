package main

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/valyala/fasthttp"
)

// mixedServer answers each path its own way, after its own latency.
func mixedServer() *fakeServer {
	return &fakeServer{
		latency: func(path string) time.Duration {
			return map[string]time.Duration{"/ok?a=1:2": 20 * time.Millisecond, "/shed": time.Millisecond,
				"/busy": 3 * time.Millisecond, "/slow": 50 * time.Millisecond, "/gone": 2 * time.Millisecond}[path]
		},
		answer: func(path string) result {
			switch path {
			case "/shed":
				return result{status: 503, rejectedBy: "loadshed/default"}
			case "/busy":
				return result{status: 503}
			case "/slow":
				return result{err: fasthttp.ErrTimeout}
			case "/gone":
				return result{err: errors.New("connection closed")}
			}
			return result{status: 200}
		},
	}
}

func testConfig(duration time.Duration, routes ...route) config {
	return config{target: &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}, routes: routes, duration: duration,
		timeout: time.Second, inflight: 100}
}

// drivePlain runs cfg against srv with line output, ticking every interval, and returns what was written.
func drivePlain(t *testing.T, cfg config, srv doer, interval time.Duration) string {
	t.Helper()
	var out, stderr strings.Builder
	d := newDriver(cfg.routes, cfg.inflight, srv)
	start := time.Now()
	rep := newReporter(&out, false, cfg, d, start)
	sending, interrupted := drive(context.Background(), d, rep, cfg.duration, start, interval, &stderr)
	rep.summary(sending, time.Since(start), interrupted)
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
	return out.String()
}

func TestPlainOutputIsOneLinePerRouteAndInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(3*time.Second, route{"/ok?a=1:2", 10}, route{"/shed", 5}, route{"/busy", 2},
			route{"/slow", 1}, route{"/gone", 1})
		// Ticks at 0.999 s and 1.998 s: no send or answer falls on one. The last answer comes at 2.92 s.
		out := drivePlain(t, cfg, mixedServer(), 999*time.Millisecond)
		lines := strings.SplitAfter(out, "\n")
		want := []string{
			"t=1.0s route=/ok?a=1:2 rate=10 sent=10 ok=10 rejected.loadshed=0 503.other=0 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=20.0ms p90=20.0ms p99=20.0ms ok.p50=20.0ms ok.p90=20.0ms ok.p99=20.0ms\n",
			"t=1.0s route=/shed rate=5 sent=5 ok=0 rejected.loadshed=5 503.other=0 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=1.00ms p90=1.00ms p99=1.00ms ok.p50=- ok.p90=- ok.p99=-\n",
			"t=1.0s route=/busy rate=2 sent=2 ok=0 rejected.loadshed=0 503.other=2 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=3.00ms p90=3.00ms p99=3.00ms ok.p50=- ok.p90=- ok.p99=-\n",
			"t=1.0s route=/slow rate=1 sent=1 ok=0 rejected.loadshed=0 503.other=0 status.other=0 errors=0 timeouts=1 dropped=0 inflight=0 p50=- p90=- p99=- ok.p50=- ok.p90=- ok.p99=-\n",
			"t=1.0s route=/gone rate=1 sent=1 ok=0 rejected.loadshed=0 503.other=0 status.other=0 errors=1 timeouts=0 dropped=0 inflight=0 p50=- p90=- p99=- ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.0s route=/ok?a=1:2 rate=10 sent=10 ok=10 rejected.loadshed=0 503.other=0 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=20.0ms p90=20.0ms p99=20.0ms ok.p50=20.0ms ok.p90=20.0ms ok.p99=20.0ms\n",
			"t=2.0s route=/shed rate=5 sent=5 ok=0 rejected.loadshed=5 503.other=0 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=1.00ms p90=1.00ms p99=1.00ms ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.0s route=/busy rate=2 sent=2 ok=0 rejected.loadshed=0 503.other=2 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=3.00ms p90=3.00ms p99=3.00ms ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.0s route=/slow rate=1 sent=1 ok=0 rejected.loadshed=0 503.other=0 status.other=0 errors=0 timeouts=1 dropped=0 inflight=0 p50=- p90=- p99=- ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.0s route=/gone rate=1 sent=1 ok=0 rejected.loadshed=0 503.other=0 status.other=0 errors=1 timeouts=0 dropped=0 inflight=0 p50=- p90=- p99=- ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.9s route=/ok?a=1:2 rate=10 sent=10 ok=10 rejected.loadshed=0 503.other=0 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=20.0ms p90=20.0ms p99=20.0ms ok.p50=20.0ms ok.p90=20.0ms ok.p99=20.0ms\n",
			"t=2.9s route=/shed rate=5 sent=5 ok=0 rejected.loadshed=5 503.other=0 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=1.00ms p90=1.00ms p99=1.00ms ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.9s route=/busy rate=2 sent=2 ok=0 rejected.loadshed=0 503.other=2 status.other=0 errors=0 timeouts=0 dropped=0 inflight=0 p50=3.00ms p90=3.00ms p99=3.00ms ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.9s route=/slow rate=1 sent=1 ok=0 rejected.loadshed=0 503.other=0 status.other=0 errors=0 timeouts=1 dropped=0 inflight=0 p50=- p90=- p99=- ok.p50=- ok.p90=- ok.p99=-\n",
			"t=2.9s route=/gone rate=1 sent=1 ok=0 rejected.loadshed=0 503.other=0 status.other=0 errors=1 timeouts=0 dropped=0 inflight=0 p50=- p90=- p99=- ok.p50=- ok.p90=- ok.p99=-\n",
		}
		if len(lines) < len(want) {
			t.Fatalf("%d lines, want at least %d:\n%s", len(lines), len(want), out)
		}
		for i, w := range want {
			if lines[i] != w {
				t.Errorf("line %d:\n got %q\nwant %q", i+1, lines[i], w)
			}
		}
		summary := strings.Join(lines[len(want):], "")
		if !strings.HasPrefix(summary, "\nsummary: http://127.0.0.1:8080, for 3s, answers in by 2.9s\n") {
			t.Errorf("summary header:\n%s", summary)
		}
		for route, cells := range map[string]map[string]string{
			"/ok?a=1:2": {"target": "10", "sent": "30", "sent/s": "10", "200": "30 (100%)", "200/s": "10", "loadshed": "0"},
			"/shed":     {"target": "5", "sent": "15", "sent/s": "5.0", "200": "0", "loadshed": "15 (100%)", "503 other": "0"},
			"/busy":     {"sent": "6", "loadshed": "0", "503 other": "6 (100%)", "other": "0"},
			"/slow":     {"sent": "3", "timeouts": "3 (100%)", "errors": "0"},
			"/gone":     {"sent": "3", "timeouts": "0", "errors": "3 (100%)", "dropped": "0"},
			"all": {"target": "19", "sent": "57", "sent/s": "19", "200": "30 (53%)", "200/s": "10", "loadshed": "15 (26%)",
				"503 other": "6 (11%)", "other": "0", "errors": "3 (5%)", "timeouts": "3 (5%)", "dropped": "0"},
		} {
			row := summaryRow(t, summary, route)
			for col, want := range cells {
				if row[col] != want {
					t.Errorf("summary %s: %s = %q, want %q", route, col, row[col], want)
				}
			}
		}
		for _, w := range []string{
			"/ok?a=1:2  20.0ms  20.0ms  20.0ms    20.0ms  20.0ms  20.0ms\n",
			"/shed      1.00ms  1.00ms  1.00ms         -       -       -\n",
			"errors /gone: connection closed ×3\n",
			legend,
		} {
			if !strings.Contains(summary, w) {
				t.Errorf("summary lacks %q:\n%s", w, summary)
			}
		}
	})
}

// The counts of the lines add up to the summary's, and every request due is accounted for, when the intervals
// are not whole seconds and answers straddle them.
func TestPlainLinesAddUpToTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(2500*time.Millisecond, route{"/ok?a=1:2", 37}, route{"/shed", 13})
		srv := mixedServer()
		srv.latency = constant(333 * time.Millisecond)
		out := drivePlain(t, cfg, srv, 700*time.Millisecond)
		sums := sumLines(t, out)
		// 37/s for 2.5 s: 0, 1/37, ..., 92/37 s; 13/s: 0 ... 32/13 s.
		if got := sums["/ok?a=1:2"]; got["sent"] != 93 || got["ok"] != 93 {
			t.Errorf("/ok: %v; want 93 sent and ok", got)
		}
		if got := sums["/shed"]; got["sent"] != 33 || got["rejected.loadshed"] != 33 || got["ok"] != 0 {
			t.Errorf("/shed: %v; want 33 sent and rejected by loadshed", got)
		}
		if ok, shed := summaryRow(t, out, "/ok?a=1:2"), summaryRow(t, out, "/shed"); ok["sent"] != "93" ||
			ok["200"] != "93 (100%)" || shed["sent"] != "33" || shed["loadshed"] != "33 (100%)" {
			t.Errorf("summary disagrees with the lines:\n%s", out)
		}
		if !strings.Contains(out, "summary: http://127.0.0.1:8080, for 2.5s,") {
			t.Errorf("summary header:\n%s", out)
		}
	})
}

func TestTerminalFrameRedrawsInPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(4*time.Second, route{"/shed", 10}, route{"/busy", 5})
		var out strings.Builder
		d := newDriver(cfg.routes, cfg.inflight, mixedServer())
		start := time.Now()
		rep := newReporter(&out, true, cfg, d, start)
		go d.run(context.Background(), start, cfg.duration)

		time.Sleep(time.Until(start.Add(2*time.Second + 550*time.Millisecond)))
		rep.tick(time.Now(), false)
		first := out.String()
		for _, want := range []string{
			"\x1b[H\x1b[J", // the first frame clears the screen
			// 2.55 s of 4 s: 19 of 30 marks.
			"fiberguard load  http://127.0.0.1:8080  [###################...........]  3s / 4s  sending, 0 in flight\x1b[K\n",
			"last second  target  sent/s  200/s  loadshed  503 other  other  errors  timeouts  dropped\x1b[K\n",
			// The first interval is 2.55 s long: 26 sent on /shed (10.2 a second), 13 on /busy (5.1 a second).
			"/shed            10      10      0        10          0      0       0         0        0\x1b[K\n",
			"/busy             5     5.1      0         0        5.1      0       0         0        0\x1b[K\n",
			"/shed    1.00ms  1.00ms  1.00ms         -    -    -\x1b[K\n",
		} {
			if !strings.Contains(first, want) {
				t.Errorf("frame lacks %q:\n%s", want, first)
			}
		}
		out.Reset()
		time.Sleep(time.Until(start.Add(5 * time.Second)))
		rep.tick(time.Now(), false)
		second := out.String()
		if !strings.HasPrefix(second, "\x1b[H") || strings.HasPrefix(second, "\x1b[H\x1b[J") || !strings.HasSuffix(second, "\x1b[J") {
			t.Errorf("a later frame must go home, overwrite line by line and clear below:\n%q", second)
		}
		if !strings.Contains(second, "[##############################]  4s / 4s  done\x1b[K\n") {
			t.Errorf("the last frame does not say sending is over:\n%s", second)
		}
	})
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ns"}, {850, "850ns"}, {85_240, "85.2µs"}, {3_214_000, "3.21ms"}, {20 * time.Millisecond, "20.0ms"},
		{999 * time.Millisecond, "999ms"}, {1200 * time.Millisecond, "1.20s"}, {75 * time.Second, "75.0s"},
	} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%d) = %s, want %s", tc.d, got, tc.want)
		}
	}
	for _, tc := range []struct {
		elapsed, total time.Duration
		want           string
	}{
		{0, 10 * time.Second, "[..........]"}, {5 * time.Second, 10 * time.Second, "[#####.....]"},
		{10 * time.Second, 10 * time.Second, "[##########]"}, {12 * time.Second, 10 * time.Second, "[##########]"},
		{-time.Second, 10 * time.Second, "[..........]"},
	} {
		if got := progressBar(tc.elapsed, tc.total, 10); got != tc.want {
			t.Errorf("progressBar(%v, %v) = %s, want %s", tc.elapsed, tc.total, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n, total int64
		want     string
	}{{0, 10, "0"}, {5, 10, "5 (50%)"}, {1, 1000, "1 (<1%)"}, {10, 10, "10 (100%)"}, {2, 3, "2 (67%)"}} {
		if got := withShare(tc.n, tc.total); got != tc.want {
			t.Errorf("withShare(%d, %d) = %s, want %s", tc.n, tc.total, got, tc.want)
		}
	}
}

// A run whose last answers come just after a tick prints that instant's lines once, not a second, nearly empty
// set of lines for the same instant.
func TestPlainOutputEndsWithoutARepeat(t *testing.T) {
	for _, latency := range []time.Duration{time.Millisecond, 150 * time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) { plainOutputEndsOnce(t, latency) })
	}
}

func plainOutputEndsOnce(t *testing.T, latency time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		// The last sends are due at 1.8 s and 1.9 s; with 150 ms their answers come after the tick at 2 s.
		cfg := testConfig(2*time.Second, route{"/ok?a=1:2", 10}, route{"/shed", 5})
		srv := mixedServer()
		srv.latency = constant(latency)
		out := drivePlain(t, cfg, srv, time.Second)
		stamps := map[string]int{}
		for _, l := range strings.Split(out, "\n") {
			if stamp, rest, ok := strings.Cut(l, " route="); ok && strings.HasPrefix(l, "t=") {
				route, _, _ := strings.Cut(rest, " ")
				stamps[stamp+" "+route]++
				if strings.Contains(l, " sent=0 ") {
					t.Errorf("a line with nothing sent: %q", l)
				}
			}
		}
		for key, n := range stamps {
			if n != 1 {
				t.Errorf("%s printed %d times:\n%s", key, n, out)
			}
		}
		if len(stamps) != 4 {
			t.Errorf("%d route lines, want 2 seconds × 2 routes:\n%s", len(stamps), out)
		}
	})
}
