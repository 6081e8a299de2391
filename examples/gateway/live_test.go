package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

// liveAnswer is a /live/data body.
type liveAnswer struct {
	IntervalSeconds float64      `json:"interval_seconds"`
	Capacity        int          `json:"capacity"`
	Last            uint64       `json:"last"`
	Samples         []liveSample `json:"samples"`
}

type liveSample struct {
	Seq    uint64                     `json:"seq"`
	Time   time.Time                  `json:"time"`
	Status map[string]json.RawMessage `json:"status"`
}

// liveGet drives h with a hand-built GET uri (no server, no goroutine: it works inside a synctest bubble).
func liveGet(h fasthttp.RequestHandler, uri string) (code int, contentType string, body []byte) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(fiber.MethodGet)
	ctx.Request.SetRequestURI(uri)
	h(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Header.ContentType()), append([]byte(nil), ctx.Response.Body()...)
}

func liveApp(l *live) fasthttp.RequestHandler {
	app := fiber.New()
	l.mount(app)
	return app.Handler()
}

func liveData(t *testing.T, h fasthttp.RequestHandler, uri string) liveAnswer {
	t.Helper()
	code, ctype, body := liveGet(h, uri)
	if code != 200 || !strings.HasPrefix(ctype, "application/json") {
		t.Fatalf("GET %s: %d %q %s", uri, code, ctype, body)
	}
	var a liveAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("GET %s is not JSON: %v\n%s", uri, err, body)
	}
	return a
}

func seqs(a liveAnswer) []uint64 {
	out := []uint64{}
	for _, s := range a.Samples {
		out = append(out, s.Seq)
	}
	return out
}

// counting is a status source whose value is how often it was read.
func counting() (func() any, *atomic.Int64) {
	var n atomic.Int64
	return func() any { return map[string]int64{"n": n.Add(1)} }, &n
}

func TestLiveRingKeepsTheLastN(t *testing.T) {
	src, _ := counting()
	l := newLive(map[string]func() any{"feature": src}, liveInterval, 4)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 10 {
		l.record(t0.Add(time.Duration(i) * liveInterval))
	}
	a := liveData(t, liveApp(l), "/live/data")
	if got, want := seqs(a), []uint64{7, 8, 9, 10}; !slices.Equal(got, want) {
		t.Fatalf("seqs %v, want %v: the ring keeps the newest 4, oldest first", got, want)
	}
	if a.Last != 10 || a.Capacity != liveCapacity || a.IntervalSeconds != liveInterval.Seconds() {
		t.Fatalf("last %d capacity %d interval %v, want 10, %d, %v", a.Last, a.Capacity, a.IntervalSeconds,
			liveCapacity, liveInterval.Seconds())
	}
	for _, s := range a.Samples {
		if want := t0.Add(time.Duration(s.Seq-1) * liveInterval); !s.Time.Equal(want) {
			t.Errorf("sample %d stamped %v, want %v", s.Seq, s.Time, want)
		}
		var v struct{ N uint64 }
		if err := json.Unmarshal(s.Status["feature"], &v); err != nil || v.N != s.Seq {
			t.Errorf("sample %d carries %s (%v), want the source's %d-th reading", s.Seq, s.Status["feature"], err, s.Seq)
		}
	}
}

func TestLiveDataSince(t *testing.T) {
	src, _ := counting()
	l := newLive(map[string]func() any{"feature": src}, liveInterval, 5)
	h := liveApp(l)
	if a := liveData(t, h, "/live/data"); len(a.Samples) != 0 || a.Last != 0 {
		t.Fatalf("before the first sample: %+v, want no samples and last 0", a)
	}
	for i := range 8 {
		l.record(time.Unix(int64(i), 0))
	}
	// The ring holds seqs 4..8.
	for _, tt := range []struct {
		query string
		want  []uint64
	}{
		{"", []uint64{4, 5, 6, 7, 8}},
		{"?since=0", []uint64{4, 5, 6, 7, 8}},
		{"?since=2", []uint64{4, 5, 6, 7, 8}}, // older than the ring: all it has
		{"?since=3", []uint64{4, 5, 6, 7, 8}},
		{"?since=4", []uint64{5, 6, 7, 8}},
		{"?since=6", []uint64{7, 8}},
		{"?since=7", []uint64{8}},
		{"?since=8", []uint64{}},
		{"?since=9", []uint64{}},
		{"?since=18446744073709551615", []uint64{}},
		{"?other=1", []uint64{4, 5, 6, 7, 8}},
	} {
		a := liveData(t, h, "/live/data"+tt.query)
		if got := seqs(a); !slices.Equal(got, tt.want) {
			t.Errorf("%s: seqs %v, want %v", tt.query, got, tt.want)
		}
		if a.Last != 8 {
			t.Errorf("%s: last %d, want 8", tt.query, a.Last)
		}
	}
	for _, q := range []string{"-1", "abc", "", "1.5", "+3", "0x10", " 3", "18446744073709551616"} {
		code, _, body := liveGet(h, "/live/data?since="+q)
		if code != 400 || !strings.Contains(string(body), "since") {
			t.Errorf("since=%q: %d %q, want 400 naming since", q, code, body)
		}
	}
}

func TestLiveSamplerStopsOnClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	synctest.Test(t, func(t *testing.T) {
		src, reads := counting()
		l := newLive(map[string]func() any{"feature": src}, liveInterval, 100)
		stop := l.start()
		// A sample at start, then one per interval: at 0, 0.5, 1.0 and 1.5 s.
		time.Sleep(3*liveInterval + liveInterval/2)
		synctest.Wait()
		if n := reads.Load(); n != 4 {
			t.Errorf("%d samples after 1.75 s, want 4", n)
		}
		stop()
		stop() // stop is idempotent
		n := reads.Load()
		time.Sleep(10 * liveInterval)
		if got := reads.Load(); got != n {
			t.Errorf("%d samples taken after stop", got-n)
		}
		if last := liveData(t, liveApp(l), "/live/data").Last; last != uint64(n) {
			t.Errorf("last %d, want %d", last, n)
		}
		goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("testing/synctest.testingSynctestTest"))
	})
}

func TestLiveSampleReplacesABrokenStatusOnly(t *testing.T) {
	share := liveMaxSampleBytes / 4
	l := newLive(map[string]func() any{
		"big":    func() any { return strings.Repeat("x", share) },
		"nan":    func() any { return math.NaN() },
		"panics": func() any { panic("boom") },
		"ok":     func() any { return map[string]string{"fine": strings.Repeat("y", share/2)} },
	}, liveInterval, 2)
	l.record(time.Unix(0, 0))
	code, _, body := liveGet(liveApp(l), "/live/data")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var a liveAnswer
	if err := json.Unmarshal(body, &a); err != nil || len(a.Samples) != 1 {
		t.Fatalf("%v: %.300s", err, body)
	}
	if len(body) > liveMaxSampleBytes+len(liveDataPrefix)+64 {
		t.Errorf("one sample is %d bytes, over the cap of %d", len(body), liveMaxSampleBytes)
	}
	st := a.Samples[0].Status
	for name, want := range map[string]string{"big": "bytes", "nan": "marshal", "panics": "boom"} {
		var e struct{ Error string }
		if err := json.Unmarshal(st[name], &e); err != nil || !strings.Contains(e.Error, want) {
			t.Errorf("%s: %.200s, want an error saying %q", name, st[name], want)
		}
	}
	var ok struct{ Fine string }
	if err := json.Unmarshal(st["ok"], &ok); err != nil || len(ok.Fine) != share/2 {
		t.Errorf("ok: %.100s (%v), want its status untouched by the others", st["ok"], err)
	}
}

func TestLiveSampleCarriesEveryFeature(t *testing.T) {
	g := newTestGateway(t, nil)
	var sample liveSample
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := fetch(t, g, "/live/data")
		var a liveAnswer
		if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil {
			t.Fatalf("/live/data: %d %v %.300s", code, err, body)
		}
		if len(a.Samples) > 0 {
			sample = a.Samples[len(a.Samples)-1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no sample 30 s after the gateway started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, _ := statusParts(t, g)
	for _, f := range features() {
		var got, want map[string]json.RawMessage
		if err := json.Unmarshal(sample.Status[f.name], &got); err != nil {
			t.Errorf("sample lacks %s's status: %.300s (%v)", f.name, sample.Status[f.name], err)
			continue
		}
		if err := json.Unmarshal(status[f.name], &want); err != nil {
			t.Fatalf("/status[%s]: %v", f.name, err)
		}
		if !slices.Equal(slices.Sorted(mapKeys(got)), slices.Sorted(mapKeys(want))) {
			t.Errorf("%s: sample has fields %v, /status has %v", f.name, slices.Sorted(mapKeys(got)),
				slices.Sorted(mapKeys(want)))
		}
	}
}

func mapKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// liveChartIDs are the chart containers a browser test finds by id.
var liveChartIDs = []string{
	"chart-loadshed-load", "chart-loadshed-rate", "chart-throttle-window", "chart-throttle-rate",
	"chart-throttle-triggers", "chart-upstreampick-rtt", "chart-upstreampick-picks", "chart-rebalance",
}

func TestLivePageUsesOnlyEmbeddedAssets(t *testing.T) {
	g := newTestGateway(t, nil)
	resp, err := g.app.Test(httptest.NewRequest(fiber.MethodGet, "/", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if ctype := resp.Header.Get("Content-Type"); !strings.HasPrefix(ctype, "text/html") {
		t.Fatalf("GET /: content type %q, want text/html", ctype)
	}
	code, page := fetch(t, g, "/")
	if code != 200 {
		t.Fatalf("GET /: %d", code)
	}
	for _, id := range liveChartIDs {
		if n := strings.Count(page, `id="`+id+`"`); n != 1 {
			t.Errorf("the page has %d elements with id %q, want 1", n, id)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 4 {
		t.Fatalf("the page references %d files, want its stylesheets and scripts: %v", len(refs), refs)
	}
	own := map[string]bool{"/status": true, "/metrics": true, "/live/data": true}
	for _, ref := range refs {
		u := ref[1]
		switch {
		case own[u]:
		case strings.HasPrefix(u, "/ui/"):
			if code, body := fetch(t, g, u); code != 200 || body == "" {
				t.Errorf("the page's %s: %d, %d bytes; want it served from the binary", u, code, len(body))
			}
		default:
			t.Errorf("the page references %q, neither an embedded asset nor the gateway's own route", u)
		}
	}
	code, script := fetch(t, g, "/ui/app.js")
	if code != 200 {
		t.Fatalf("/ui/app.js: %d", code)
	}
	for name, text := range map[string]string{"index.html": page, "app.js": script} {
		if m := regexp.MustCompile(`(?i)https?:|//[a-z0-9.-]+\.[a-z]{2,}/`).FindString(text); m != "" {
			t.Errorf("%s names an outside address (%q): the page must work offline", name, m)
		}
	}
}

func TestLiveAssetsContentTypes(t *testing.T) {
	h := liveApp(newLive(nil, liveInterval, 1))
	for path, want := range map[string]string{
		"/":                                  "text/html",
		"/ui/app.js":                         "text/javascript",
		"/ui/vendor/uplot/uPlot.iife.min.js": "text/javascript",
		"/ui/style.css":                      "text/css",
		"/ui/vendor/uplot/uPlot.min.css":     "text/css",
		"/ui/vendor/uplot/VERSION":           "text/plain",
	} {
		code, ctype, body := liveGet(h, path)
		if code != 200 || !strings.HasPrefix(ctype, want) || len(body) == 0 {
			t.Errorf("GET %s: %d %q %d bytes, want 200 %s", path, code, ctype, len(body), want)
		}
	}
	_, _, body := liveGet(h, "/ui/vendor/uplot/VERSION")
	if !strings.HasPrefix(string(body), "1.6.32\n") {
		t.Errorf("VERSION says %.40q, want 1.6.32 first", body)
	}
	_, _, body = liveGet(h, "/ui/vendor/uplot/uPlot.iife.min.js")
	if !strings.Contains(string(body), "uPlot") {
		t.Errorf("uPlot.iife.min.js is not uPlot: %.80q", body)
	}
	for _, path := range []string{"/ui/", "/ui/missing.js", "/ui/../live.go", "/ui/vendor"} {
		if code, _, _ := liveGet(h, path); code != 404 {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
}

func BenchmarkLiveData(b *testing.B) {
	g, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer g.close()
	l := newLive(g.status, liveInterval, liveCapacity)
	for i := range liveCapacity {
		l.record(time.Unix(int64(i), 0))
	}
	h := liveApp(l)
	for _, bb := range []struct{ name, uri string }{
		{"poll", fmt.Sprintf("/live/data?since=%d", liveCapacity-1)}, // what the page asks twice a second
		{"all", "/live/data"}, // a page's first request
	} {
		b.Run(bb.name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(fiber.MethodGet)
			ctx.Request.SetRequestURI(bb.uri)
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				h(&ctx)
			}
			b.ReportMetric(float64(len(ctx.Response.Body())), "bytes/answer")
		})
	}
	// What the sampler spends on one sample (marshalling every feature's status), twice a second.
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		now := time.Unix(0, 0)
		for b.Loop() {
			l.record(now)
		}
	})
}
