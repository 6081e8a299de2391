package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fiberguard/fiberguard/e2e/internal/gatewayproc"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
)

// liveCharts are the chart containers of the gateway's live page, with the module whose data each draws.
var liveCharts = []string{
	"chart-loadshed-load", "chart-loadshed-rate",
	"chart-throttle-window", "chart-throttle-rate", "chart-throttle-triggers",
	"chart-upstreampick-rtt", "chart-upstreampick-picks",
}

// liveState mirrors window.fiberguardLive, which the page keeps up to date.
type liveState struct {
	Samples  int            `json:"samples"`
	Points   map[string]int `json:"points"`
	Shedding bool           `json:"shedding"`
	// Window is the span the charts show at most, Span the seconds between the oldest and newest sample held.
	Window float64 `json:"window"`
	Span   float64 `json:"span"`
	// XLabels are each chart's time-axis labels as drawn, XRange its time scale's [min, max].
	XLabels map[string][]struct {
		Text  string  `json:"text"`
		Left  float64 `json:"left"`
		Right float64 `json:"right"`
	} `json:"xLabels"`
	XRange map[string][2]float64 `json:"xRange"`
}

// clockLabel is a time-axis label: the time of day alone, no date.
var clockLabel = regexp.MustCompile(`^\d\d:\d\d:\d\d$`)

// chromium finds Debian's browser.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	itest.Require(t, false, "chromium is not installed (apt-get install chromium)")
	return ""
}

// TestLivePageInChromium opens the demo gateway's live page in real headless Chromium, drives the gateway past
// its capacity for a few seconds, and checks that every chart has data points and that the loadshed chart shows
// shedding; then, at a desktop's and at a phone's width, that the time labels do not overlap, that the charts
// show the newest minute or all of a shorter history, and (phone) that the legends show the newest values
// without a mouse. It saves a PNG screenshot of each width in the test's artifact directory (go test
// -artifacts keeps them).
func TestLivePageInChromium(t *testing.T) {
	bin := chromium(t)
	g := gatewayproc.Start(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // root in CI
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 1600),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	// The browser lives as long as the context of the first Run, so no timeout there: each step gets its own.
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	step := func(d time.Duration) context.Context {
		c, cancel := context.WithTimeout(ctx, d)
		t.Cleanup(cancel)
		return c
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(g.URL+"/")); err != nil {
		t.Fatalf("open %s/: %v\ngateway log:\n%s", g.URL, err, g.Log())
	}
	if err := chromedp.Do(step(20*time.Second), chromedp.WaitVisible("#chart-loadshed-load")); err != nil {
		t.Fatalf("the page shows no #chart-loadshed-load: %v", err)
	}

	driveGateway(t, g.URL, 6*time.Second)

	var st liveState
	deadline := time.Now().Add(20 * time.Second)
	for {
		raw, err := chromedp.Run(step(5*time.Second), chromedp.Evaluate[[]byte](`window.fiberguardLive`))
		if err != nil {
			t.Fatalf("read window.fiberguardLive: %v", err)
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatalf("window.fiberguardLive = %s: %v", raw, err)
		}
		if st.Shedding && allDrawn(st) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: %s (every chart needs points, and loadshed must show shedding)", raw)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, id := range liveCharts {
		visible, err := chromedp.Run(step(5*time.Second), chromedp.Evaluate[bool](`(() => {
			const e = document.getElementById("`+id+`");
			return !!e && e.querySelector("canvas") !== null && e.getBoundingClientRect().width > 0 })()`))
		if err != nil {
			t.Fatal(err)
		}
		if !visible {
			t.Errorf("%s has no visible canvas", id)
		}
	}

	checkLegibility(t, st, "desktop")
	saveScreenshot(step(20*time.Second), t, "live-page.png")

	// At a phone's width the labels still do not overlap and the legends still show values without a mouse.
	if err := chromedp.Do(step(10*time.Second), chromedp.EmulateViewport(390, 1600)); err != nil {
		t.Fatalf("phone viewport: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // a resize and a poll redraw every chart
	st = readLive(step(5*time.Second), t)
	checkLegibility(t, st, "phone")
	for _, id := range liveCharts {
		values, err := chromedp.Run(step(5*time.Second), chromedp.Evaluate[[]string](`Array.from(
			document.querySelectorAll("#`+id+` .u-legend .u-value")).map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		// The first value is the time, the second the chart's first series: both show without hovering.
		if len(values) < 2 || !clockLabel.MatchString(values[0]) || values[1] == "–" || values[1] == "--" || values[1] == "" {
			t.Errorf("phone: %s's legend shows %q without a mouse, want the newest time and value", id, values)
		}
	}
	saveScreenshot(step(20*time.Second), t, "live-page-phone.png")

	// The 3-minute button widens the window.
	if err := chromedp.Do(step(5*time.Second), chromedp.Click(`#windows button[data-window="180"]`)); err != nil {
		t.Fatalf("click the 3-minute button: %v", err)
	}
	if st = readLive(step(5*time.Second), t); st.Window != 180 {
		t.Errorf("after the 3-minute button the window is %v s", st.Window)
	}
	t.Logf("samples %d over %.1f s, points %v", st.Samples, st.Span, st.Points)
}

// readLive reads window.fiberguardLive.
func readLive(ctx context.Context, t *testing.T) liveState {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](`window.fiberguardLive`))
	if err != nil {
		t.Fatalf("read window.fiberguardLive: %v", err)
	}
	var st liveState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("window.fiberguardLive = %s: %v", raw, err)
	}
	return st
}

// checkLegibility checks every chart's time axis: clock labels that do not overlap, and a time scale that
// covers the newest Window seconds, or every sample while they span less (the few seconds of load driven
// fill the width instead of a strip at its edge).
func checkLegibility(t *testing.T, st liveState, view string) {
	t.Helper()
	fewest := math.MaxInt
	defer func() { t.Logf("%s: at least %d time labels a chart over %.1f s", view, fewest, st.Span) }()
	for _, id := range liveCharts {
		labels := st.XLabels[id]
		fewest = min(fewest, len(labels))
		if len(labels) < 2 && st.Span >= 4 {
			t.Errorf("%s: %s has %d time labels over %.1f s, want at least 2", view, id, len(labels), st.Span)
		}
		for i, l := range labels {
			if !clockLabel.MatchString(l.Text) {
				t.Errorf("%s: %s time label %q, want HH:MM:SS", view, id, l.Text)
			}
			if i > 0 && labels[i-1].Right+4 > l.Left {
				t.Errorf("%s: %s time labels %q (ends at %.0f px) and %q (starts at %.0f px) overlap", view, id,
					labels[i-1].Text, labels[i-1].Right, l.Text, l.Left)
			}
		}
		r, ok := st.XRange[id]
		want := min(st.Span, st.Window)
		// The page's span is read a moment after the chart's range: a poll may have added a sample between.
		if !ok || r[1]-r[0] < want-1.5 || r[1]-r[0] > st.Window+0.01 {
			t.Errorf("%s: %s shows %v (%.1f s), want the newest %.1f s (samples span %.1f s, window %v s)", view,
				id, r, r[1]-r[0], want, st.Span, st.Window)
		}
	}
}

// saveScreenshot saves a PNG of the whole page in the test's artifact directory (go test -artifacts keeps it).
func saveScreenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(shot))
}

func allDrawn(st liveState) bool {
	for _, id := range liveCharts {
		if st.Points[id] == 0 {
			return false
		}
	}
	return st.Samples > 0
}
