package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type throttleStatus struct {
	Source   string `json:"source"`
	Window   int    `json:"window"`
	InFlight int    `json:"in_flight"`
	Admitted uint64 `json:"admitted"`
	Rejected uint64 `json:"rejected"`
	Triggers []struct {
		Name        string `json:"name"`
		Kind        string `json:"kind"`
		Firing      bool   `json:"firing"`
		Verdict     string `json:"verdict"`
		Evaluations uint64 `json:"evaluations"`
	} `json:"triggers"`
}

func throttleStatusOf(t *testing.T, g *gateway) throttleStatus {
	t.Helper()
	var st throttleStatus
	statusOf(t, g, "throttle", &st)
	return st
}

func TestThrottledRouteInProcess(t *testing.T) {
	g := newTestGateway(t, map[string]string{"FIBERGUARD_LOADSHED_DRYRUN": "1"})
	if code, body := fetch(t, g, "/throttled?ms=1"); code != 200 || !strings.Contains(body, "served") {
		t.Fatalf("/throttled: %d %s", code, body)
	}
	if code, _ := fetch(t, g, "/throttled?ms=x"); code != 400 {
		t.Fatalf("/throttled?ms=x: %d, want 400", code)
	}
	st := throttleStatusOf(t, g)
	// Two requests, one at a time, use a window of 2 fully: they count as a round and grow it to 3.
	if st.Source != "in-process" || st.Window < 2 || st.Window > 3 || st.Admitted != 2 || len(st.Triggers) != 1 || st.Triggers[0].Kind != "func" {
		t.Fatalf("throttle status %+v, want the in-process trigger and a window of 2 or 3", st)
	}

	// More concurrent slow requests than the window admits: the rest are rejected by the throttle.
	var wg sync.WaitGroup
	var ok, rejected atomic.Int32
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch code, _ := fetch(t, g, "/throttled?ms=1000"); code {
			case 200:
				ok.Add(1)
			case 503:
				rejected.Add(1)
			}
		}()
	}
	wg.Wait()
	st = throttleStatusOf(t, g)
	if ok.Load() < 1 || rejected.Load() < 1 || st.Rejected < 1 || st.InFlight != 0 {
		t.Fatalf("6 concurrent requests into a window of 2 or 3: %d ok, %d rejected, status %+v", ok.Load(), rejected.Load(), st)
	}

	code, body := fetch(t, g, "/metrics")
	if code != 200 || !strings.Contains(body, `fiberguard_throttle_window{name="gateway"}`) || !strings.Contains(body, "fiberguard_gateway_backend_queue") {
		t.Fatalf("/metrics lacks the throttle's metrics:\n%s", body)
	}
}

func TestThrottledRouteFromPrometheus(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		queries = append(queries, r.Form.Get("query"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"7"]}]}}`))
	}))
	defer prom.Close()

	const query = "max(my_backend_queue) > 5"
	g := newTestGateway(t, map[string]string{"FIBERGUARD_PROMETHEUS_URL": prom.URL, "FIBERGUARD_THROTTLE_QUERY": query})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := throttleStatusOf(t, g)
		if len(st.Triggers) == 1 && st.Triggers[0].Evaluations > 0 {
			if st.Source != "prometheus" || st.Triggers[0].Kind != "promql" || !st.Triggers[0].Firing || st.Window != 2 {
				t.Fatalf("throttle status %+v, want a firing PromQL trigger", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PromQL trigger was never evaluated: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, q := range queries {
		found = found || q == query
	}
	if !found {
		t.Fatalf("Prometheus never received %q; got %q", query, queries)
	}
}

func TestThrottleBadPrometheusURLIsAnError(t *testing.T) {
	_, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(k string) string {
		if k == "FIBERGUARD_PROMETHEUS_URL" {
			return "not a url"
		}
		return ""
	}})
	if err == nil || !strings.Contains(err.Error(), "PrometheusURL") {
		t.Fatalf("newGateway with a bad FIBERGUARD_PROMETHEUS_URL: %v, want an error naming PrometheusURL", err)
	}
}
