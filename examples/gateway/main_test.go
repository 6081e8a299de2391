package main

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}

func newTestGateway(t *testing.T, vars map[string]string) *gateway {
	t.Helper()
	g, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	return g
}

func fetch(t *testing.T, g *gateway, path string) (int, string) {
	t.Helper()
	resp, err := g.app.Test(httptest.NewRequest("GET", path, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// statusParts fetches /status and returns each feature's part, and the whole body.
func statusParts(t *testing.T, g *gateway) (map[string]json.RawMessage, string) {
	t.Helper()
	code, body := fetch(t, g, "/status")
	if code != 200 {
		t.Fatalf("/status: %d %s", code, body)
	}
	var status map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, body)
	}
	return status, body
}

// statusOf decodes the named feature's part of /status into v and returns that part as it came.
func statusOf(t *testing.T, g *gateway, name string, v any) json.RawMessage {
	t.Helper()
	status, body := statusParts(t, g)
	part, ok := status[name]
	if !ok {
		t.Fatalf("/status lacks %q: %s", name, body)
	}
	if err := json.Unmarshal(part, v); err != nil {
		t.Fatalf("%s status %s: %v", name, part, err)
	}
	return part
}

func TestGatewayStatusShowsEveryFeature(t *testing.T) {
	g := newTestGateway(t, nil)
	if code, body := fetch(t, g, "/burn?ms=1"); code != 200 && code != 503 {
		t.Fatalf("/burn: %d %s", code, body)
	}
	status, body := statusParts(t, g)
	for _, f := range features {
		if _, ok := status[f.name]; !ok {
			t.Errorf("/status lacks %q: %s", f.name, body)
		}
	}
	var ls struct {
		Load     *float64 `json:"load"`
		Admitted uint64   `json:"admitted"`
		Shed     uint64   `json:"shed"`
		Signal   string   `json:"signal"`
	}
	if err := json.Unmarshal(status["loadshed"], &ls); err != nil || ls.Load == nil || ls.Signal == "" {
		t.Fatalf("loadshed status %s: %v", status["loadshed"], err)
	}
	if ls.Admitted+ls.Shed == 0 {
		t.Fatalf("the /burn request was not counted: %s", status["loadshed"])
	}
}

func TestGatewayMetrics(t *testing.T) {
	g := newTestGateway(t, nil)
	code, body := fetch(t, g, "/metrics")
	if code != 200 || !strings.Contains(body, "fiberguard_loadshed_load") {
		t.Fatalf("/metrics: %d, loadshed metrics missing:\n%s", code, body)
	}
}

func TestBurnRejectsBadInput(t *testing.T) {
	// Dry-run: a busy test machine must not turn the answer under test into a 503.
	g := newTestGateway(t, map[string]string{"FIBERGUARD_LOADSHED_DRYRUN": "1"})
	if code, _ := fetch(t, g, "/burn?ms=abc"); code != 400 {
		t.Fatalf("/burn?ms=abc: %d, want 400", code)
	}
}
