package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func rebalanceStatusOf(t *testing.T, g *gateway) map[string]any {
	t.Helper()
	var st map[string]any
	statusOf(t, g, "rebalance", &st)
	return st
}

func TestRebalanceOffWithoutPrometheus(t *testing.T) {
	st := rebalanceStatusOf(t, newTestGateway(t, nil))
	if len(st) != 2 || st["enabled"] != false || !strings.Contains(st["reason"].(string), "FIBERGUARD_PROMETHEUS_URL") {
		t.Fatalf("rebalance status %v, want disabled with the reason", st)
	}
}

func TestRebalanceShowsTheClusterOnStatus(t *testing.T) {
	// Prometheus' query API answering three live nodes with 10, 20 and 30 open connections.
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"instance":"a"},"value":[1700000000,"10"]},` +
			`{"metric":{"instance":"b"},"value":[1700000000,"20"]},` +
			`{"metric":{"instance":"c"},"value":[1700000000,"30"]}]}}`))
	}))
	defer prom.Close()

	g := newTestGateway(t, map[string]string{"FIBERGUARD_PROMETHEUS_URL": prom.URL})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := rebalanceStatusOf(t, g)
		if st["decision"] != "starting" {
			// This gateway serves no connection: far below the floor of 50.
			if st["enabled"] != true || st["average"] != 20.0 || st["nodes"] != 3.0 || st["decision"] != "below_floor" {
				t.Fatalf("rebalance status %v, want enabled, average 20 over 3 nodes, below_floor", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebalance never compared itself with the cluster: %v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := fetch(t, g, "/metrics"); code != 200 || !strings.Contains(body, `fiberguard_rebalance_open_connections{name="default"} 0`) {
		t.Fatalf("/metrics lacks the open connections the cluster average is read from:\n%s", body)
	}
}

func TestRebalanceBadURLFailsSetup(t *testing.T) {
	_, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(k string) string {
		if k == "FIBERGUARD_PROMETHEUS_URL" {
			return "prometheus:9090"
		}
		return ""
	}})
	if err == nil || !strings.Contains(err.Error(), "Config.PrometheusURL") {
		t.Fatalf("error %v, want one naming Config.PrometheusURL", err)
	}
}

// A custom query needs the timestamps it rests on: alone it fails the setup naming the field, and with
// FIBERGUARD_REBALANCE_TIMESTAMP_QUERY the gateway starts.
func TestRebalanceCustomQueryTakesItsTimestampQuery(t *testing.T) {
	vars := map[string]string{
		"FIBERGUARD_PROMETHEUS_URL":  "http://127.0.0.1:1",
		"FIBERGUARD_REBALANCE_QUERY": "fiberguard_rebalance_open_connections",
	}
	getenv := func(k string) string { return vars[k] }
	if _, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: getenv}); err == nil ||
		!strings.Contains(err.Error(), "Config.TimestampQuery") {
		t.Fatalf("a custom query alone: error %v, want one naming Config.TimestampQuery", err)
	}
	vars["FIBERGUARD_REBALANCE_TIMESTAMP_QUERY"] = "timestamp(fiberguard_rebalance_open_connections)"
	g, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: getenv})
	if err != nil {
		t.Fatalf("with its timestamp query: %v", err)
	}
	g.close()
}
