package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// TestSlowAtInterleaves checks the mixed handler's mix: exactly 10 slow requests in any 100 consecutive ones,
// wherever the window starts (the first request included).
func TestSlowAtInterleaves(t *testing.T) {
	const n = 1000
	var slow [n + 100]bool
	for i := range slow {
		slow[i] = slowAt(uint64(i))
	}
	for start := range n {
		count := 0
		for _, s := range slow[start : start+100] {
			if s {
				count++
			}
		}
		if count != 10 {
			t.Fatalf("requests %d to %d: %d slow, want 10", start, start+99, count)
		}
	}
	if slowAt(0) || !slowAt(9) || slowAt(10) {
		t.Error("want the tenth request of every ten slow")
	}
}

func TestMeanWork(t *testing.T) {
	if got, want := meanWork("mixed"), 680*time.Microsecond; got != want { // 0.9 × 0.2 ms + 0.1 × 5 ms
		t.Errorf("mixed: %v, want %v", got, want)
	}
	if meanWork("cpu") != time.Millisecond || meanWork("wait") != 50*time.Microsecond {
		t.Error("cpu and wait")
	}
}

func TestWorkFuncUnknown(t *testing.T) {
	if _, err := workFunc("io", 1000); err == nil {
		t.Fatal("an unknown handler was accepted")
	}
}

// TestWorkFuncMixed checks that the mixed handler's work counts requests: the tenth burns slowWork / fastWork
// (25) times as many iterations, which with 1 iteration per ms is 5 against 1 (rounded up from 0.2).
func TestWorkFuncMixed(t *testing.T) {
	work, err := workFunc("mixed", 1000)
	if err != nil {
		t.Fatal(err)
	}
	fast, slow := scenario.Burn(200), scenario.Burn(5000)
	for i := range 20 {
		want := fast
		if slowAt(uint64(i)) {
			want = slow
		}
		if got := work(); got != want {
			t.Fatalf("request %d: the hash of the other kind of request", i)
		}
	}
}

// app is one framework's app of a mode, served in this process.
type app struct {
	get  func(path string) (int, []byte)
	stop func()
}

// newApp builds the app the -serve process of a framework and mode listens with, and a way to send it a GET.
func newApp(t *testing.T, framework, mode string, work func() [32]byte) app {
	t.Helper()
	switch framework {
	case "fiber":
		a, stop, err := fiberApp(mode, work)
		if err != nil {
			t.Fatal(err)
		}
		return app{stop: stop, get: func(path string) (int, []byte) {
			resp, err := a.Test(httptest.NewRequest(http.MethodGet, path, nil), -1)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, body
		}}
	case "nethttp":
		h, stop, err := httpApp(mode, work)
		if err != nil {
			t.Fatal(err)
		}
		return app{stop: stop, get: func(path string) (int, []byte) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code, rec.Body.Bytes()
		}}
	}
	t.Fatalf("unknown framework %q", framework)
	return app{}
}

// TestApps checks every framework's app of every mode the way the driver uses it: GET /work answers 200 with the
// first 4 bytes of the work's hash, GET /healthz and GET /procs answer, and only loadshed's apps have GET /stats.
func TestApps(t *testing.T) {
	sum := scenario.Burn(3)
	work := func() [32]byte { return sum }
	for _, framework := range frameworks {
		for _, mode := range modes {
			t.Run(framework+"/"+mode, func(t *testing.T) {
				a := newApp(t, framework, mode, work)
				defer a.stop()
				for range 3 {
					if code, body := a.get("/work"); code != http.StatusOK || !bytes.Equal(body, sum[:4]) {
						t.Fatalf("GET /work: %d %x, want 200 %x", code, body, sum[:4])
					}
				}
				if code, body := a.get("/healthz"); code != http.StatusOK || string(body) != "ok" {
					t.Errorf("GET /healthz: %d %q", code, body)
				}
				code, body := a.get("/procs")
				var procs int
				if err := json.Unmarshal(body, &procs); code != http.StatusOK || err != nil || procs != runtime.GOMAXPROCS(0) {
					t.Errorf("GET /procs: %d %q, want 200 and GOMAXPROCS", code, body)
				}
				code, body = a.get("/stats")
				var status struct{ Name string }
				if strings.HasPrefix(mode, "loadshed") {
					if err := json.Unmarshal(body, &status); code != http.StatusOK || err != nil || status.Name != "default" {
						t.Errorf("GET /stats: %d %q, want loadshed's Status", code, body)
					}
				} else if code == http.StatusOK {
					t.Errorf("GET /stats: %d %q, want none without loadshed", code, body)
				}
			})
		}
	}
}

// TestAppsFixedSignal: loadshed:fixed=P rejects each request with probability P, on both frameworks: all at 1,
// none at 0.
func TestAppsFixedSignal(t *testing.T) {
	sum := scenario.Burn(3)
	work := func() [32]byte { return sum }
	for _, framework := range frameworks {
		for p, want := range map[string]int{"1": http.StatusServiceUnavailable, "0": http.StatusOK} {
			t.Run(framework+"/"+p, func(t *testing.T) {
				a := newApp(t, framework, "loadshed:fixed="+p, work)
				defer a.stop()
				for range 20 {
					if code, _ := a.get("/work"); code != want {
						t.Fatalf("GET /work: %d, want %d", code, want)
					}
				}
			})
		}
	}
}

func TestAppsUnknownMode(t *testing.T) {
	work := func() [32]byte { return [32]byte{} }
	if _, _, err := fiberApp("bbr", work); err == nil {
		t.Error("fiber: an unknown mode was accepted")
	}
	if _, _, err := httpApp("bbr", work); err == nil {
		t.Error("nethttp: an unknown mode was accepted")
	}
	if _, _, err := httpApp("loadshed:bogus", work); err == nil {
		t.Error("nethttp: an unknown signal was accepted")
	}
}

func TestAppArgs(t *testing.T) {
	got := appArgs("nethttp", "gozero", "wait", "1", 42)
	want := []string{serveFlag, "gozero", "-framework", "nethttp", "-handler", "wait", "-gomaxprocs", "1", "-per-ms", "42"}
	if !slices.Equal(got, want) {
		t.Errorf("appArgs: %q, want %q", got, want)
	}
}
