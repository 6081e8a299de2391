package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
}

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
// shedding. It saves a PNG screenshot in the test's artifact directory (go test -artifacts keeps it).
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

	shot, err := chromedp.Run(step(20*time.Second), chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.ArtifactDir(), "live-page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("samples %d, points %v; screenshot %s (%d bytes)", st.Samples, st.Points, path, len(shot))
}

func allDrawn(st liveState) bool {
	for _, id := range liveCharts {
		if st.Points[id] == 0 {
			return false
		}
	}
	return st.Samples > 0
}
