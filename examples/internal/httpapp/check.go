package httpapp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Check drives an example app's handler, built over a from New, through a real server on 127.0.0.1, and fails
// t unless every module answers: /work serves and its throttle rejects what its window cannot hold, /status
// shows each module's Status (rebalance's only with wantRebalance) and /metrics each module's metrics.
func Check(t testing.TB, a *App, h http.Handler, wantRebalance bool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = a.ConnState
	srv.Start()
	defer srv.Close()
	get := func(path string) (int, string, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Fiberguard-Rejected-By"), string(body)
	}

	// Proxied: both in-process upstreams answer, the path reaches them.
	seen := map[string]bool{}
	for range 40 {
		code, _, body := get("/proxy/hello?x=1")
		if code != 200 || !strings.HasSuffix(body, " GET /hello\n") {
			t.Fatalf("/proxy/hello: %d %q", code, body)
		}
		seen[strings.Fields(body)[0]] = true
	}
	if len(seen) != 2 {
		t.Fatalf("answered by %v, want both upstreams (each misses 40 picks with p < 1e-11)", seen)
	}
	if code, _, body := get("/work?ms=1"); code != 200 || body != "worked 1ms\n" {
		t.Fatalf("/work?ms=1: %d %q", code, body)
	}
	if code, _, _ := get("/work?ms=x"); code != 400 {
		t.Fatalf("/work?ms=x: %d, want 400", code)
	}
	if code, _, _ := get("/work?wait=1001"); code != 400 {
		t.Fatalf("/work?wait=1001: %d, want 400", code)
	}
	// More concurrent requests than the window of 2 admits, each waiting 300 ms as on a backend (no CPU): the rest
	// are rejected by throttle. loadshed stands in front and may gate a burst while this process's goroutines
	// queue for a CPU (a busy test machine, -race), so a burst is tried again, after loadshed has let go, until
	// one meets the throttle.
	var codes map[int]int
	var by map[string]int
	for attempt := 0; ; attempt++ {
		waitLoadshedIdle(t, get)
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes, by = map[int]int{}, map[string]int{}
		for range 8 {
			wg.Go(func() {
				code, rejectedBy, _ := get("/work?ms=0&wait=300")
				mu.Lock()
				codes[code]++
				by[rejectedBy]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes[200] >= 1 && by["throttle/default"] >= 1 || attempt == 4 {
			break
		}
	}
	if codes[200] < 1 || by["throttle/default"] < 1 {
		t.Fatalf("8 concurrent /work into a window of 2, 5 times: codes %v, rejected by %v", codes, by)
	}

	code, _, body := get("/status")
	var status map[string]json.RawMessage
	if code != 200 || json.Unmarshal([]byte(body), &status) != nil {
		t.Fatalf("/status: %d %s", code, body)
	}
	for _, m := range []string{"loadshed", "throttle", "upstreampick"} {
		if !strings.Contains(string(status[m]), `"name":"default"`) {
			t.Errorf("/status[%s] = %s", m, status[m])
		}
	}
	if _, ok := status["rebalance"]; ok != wantRebalance {
		t.Errorf("/status has rebalance: %v, want %v", ok, wantRebalance)
	}
	_, _, metrics := get("/metrics")
	for _, m := range []string{"fiberguard_loadshed_load", "fiberguard_throttle_window", "fiberguard_upstreampick_picks_total"} {
		if !strings.Contains(metrics, m+"{") {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	if wantRebalance && !strings.Contains(metrics, "fiberguard_rebalance_open_connections{") {
		t.Error("/metrics lacks fiberguard_rebalance_open_connections")
	}
}

// waitLoadshedIdle waits until loadshed neither sheds nor limits the requests in flight.
func waitLoadshedIdle(t testing.TB, get func(string) (int, string, string)) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, _, body := get("/status")
		var st struct {
			Loadshed struct {
				Probability float64
				Limit       int64
			}
		}
		if json.Unmarshal([]byte(body), &st) == nil && st.Loadshed.Probability == 0 && st.Loadshed.Limit == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("loadshed still sheds or limits after 10 s: %s", body)
		}
	}
}

// CheckApp checks the app route builds over New, with rebalance off and then on (a Prometheus where nothing
// answers: rebalance reports the source error and never sheds).
func CheckApp(t testing.TB, route func(*App) http.Handler) {
	t.Helper()
	for _, prom := range []string{"", "http://127.0.0.1:1"} {
		a, err := New(Env("FIBERGUARD_PROMETHEUS_URL", prom))
		if err != nil {
			t.Fatal(err)
		}
		Check(t, a, route(a), prom != "")
		a.Close()
	}
}

// LeakOptions are the goroutines a test of an example app may leave: the in-process upstreams are fasthttp
// servers, whose Date refresher and idle-worker cleaner outlive them.
var LeakOptions = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
}

// Env is a getenv with the given variables only.
func Env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}
