package main

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v3"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	)
}

func get(t *testing.T, a *app, path string) (int, string) {
	t.Helper()
	resp, err := a.fiber.Test(httptest.NewRequest("GET", path, nil), fiber.TestConfig{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestEveryModuleOnFiberV3: the v3 app answers through every module and shows each one's Status and metrics.
func TestEveryModuleOnFiberV3(t *testing.T) {
	a, err := newApp(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()

	// Proxied: both in-process upstreams answer, the path reaches them.
	seen := map[string]bool{}
	for range 40 {
		code, body := get(t, a, "/proxy/hello")
		if code != 200 || !strings.HasSuffix(body, " /hello\n") {
			t.Fatalf("/proxy/hello: %d %q", code, body)
		}
		seen[strings.Fields(body)[0]] = true
	}
	if len(seen) != 2 {
		t.Fatalf("answered by %v, want both upstreams (each misses 40 picks with p < 1e-11)", seen)
	}

	// Throttled work: more concurrent requests than the window of 2 admits, the rest rejected by throttle.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	by := map[string]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := a.fiber.Test(httptest.NewRequest("GET", "/work?ms=200", nil), fiber.TestConfig{Timeout: 0})
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			by[resp.Header.Get("Fiberguard-Rejected-By")]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[200] < 1 || by["throttle/default"] < 1 {
		t.Fatalf("8 concurrent /work into a window of 2: codes %v, rejected by %v", codes, by)
	}

	var status map[string]json.RawMessage
	code, body := get(t, a, "/status")
	if code != 200 || json.Unmarshal([]byte(body), &status) != nil {
		t.Fatalf("/status: %d %s", code, body)
	}
	for _, m := range []string{"loadshed", "throttle", "upstreampick"} {
		if !strings.Contains(string(status[m]), `"name":"default"`) {
			t.Errorf("/status[%s] = %s", m, status[m])
		}
	}
	if _, ok := status["rebalance"]; ok {
		t.Error("rebalance is on without FIBERGUARD_PROMETHEUS_URL")
	}
	_, metrics := get(t, a, "/metrics")
	for _, m := range []string{"fiberguard_loadshed_load", "fiberguard_throttle_window", "fiberguard_upstreampick_picks_total"} {
		if !strings.Contains(metrics, m+"{") {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// TestRebalanceOnWithPrometheus: with a Prometheus URL, rebalance is wired in and reports on /status.
func TestRebalanceOnWithPrometheus(t *testing.T) {
	a, err := newApp(func(k string) string {
		if k == "FIBERGUARD_PROMETHEUS_URL" {
			return "http://127.0.0.1:1" // nothing answers: rebalance reports the source error and never sheds
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	code, body := get(t, a, "/status")
	if code != 200 || !strings.Contains(body, `"rebalance":{"name":"default"`) {
		t.Fatalf("/status: %d %s", code, body)
	}
}
