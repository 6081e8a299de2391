package core

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeProm answers the Prometheus query API with a fixed status and body, or not at all ("hang").
func fakeProm(t *testing.T, status *atomic.Int32, body *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm() // read the body, so that the server notices when the client gives up
		b := body.Load().(string)
		if b == "hang" {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func vectorBody(values ...string) string {
	s := `{"status":"success","data":{"resultType":"vector","result":[`
	for i, v := range values {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"metric":{"instance":"i%d"},"value":[1764500000.123,%q]}`, i, v)
	}
	return s + `]}}`
}

// TestQueryEvaluatorOverHTTP runs each shape of Prometheus answer through client_golang's real HTTP client and
// decoding, as a deployed throttle would see it.
func TestQueryEvaluatorOverHTTP(t *testing.T) {
	var status atomic.Int32
	var body atomic.Value
	srv := fakeProm(t, &status, &body)

	// An address nothing listens on: Prometheus down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name   string
		addr   string
		status int
		body   string
		want   Verdict
	}{
		{"x > 0.5 true", srv.URL, 200, vectorBody("0.7"), VerdictFiring},
		{"x > 0.5 false: empty vector", srv.URL, 200, vectorBody(), VerdictNoData},
		{"x > bool 0.5 false", srv.URL, 200, vectorBody("0"), VerdictFalse},
		{"x > bool 0.5 true", srv.URL, 200, vectorBody("0", "1"), VerdictFiring},
		{"NaN sample", srv.URL, 200, vectorBody("NaN"), VerdictNoData},
		{"scalar 1", srv.URL, 200, `{"status":"success","data":{"resultType":"scalar","result":[1764500000,"1"]}}`, VerdictFiring},
		{"scalar NaN", srv.URL, 200, `{"status":"success","data":{"resultType":"scalar","result":[1764500000,"NaN"]}}`, VerdictNoData},
		{"matrix: a range vector query", srv.URL, 200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1764500000,"1"]]}]}}`, VerdictInvalid},
		// client_golang does not decode a string result at all: it reports a bad response, which may pass.
		{"string: client_golang cannot decode it", srv.URL, 200, `{"status":"success","data":{"resultType":"string","result":[1764500000,"x"]}}`, VerdictError},
		{"bad query: 400 bad_data", srv.URL, 400, `{"status":"error","errorType":"bad_data","error":"1:11: parse error: unexpected end of input"}`, VerdictInvalid},
		{"execution error: 422", srv.URL, 422, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`, VerdictError},
		{"400 from a proxy, not Prometheus", srv.URL, 400, `<html>bad request</html>`, VerdictError},
		{"404: not the query API", srv.URL, 404, `404 page not found`, VerdictError},
		{"server error: 500", srv.URL, 500, `internal error`, VerdictError},
		{"query timeout: 503", srv.URL, 503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, VerdictError},
		{"overloaded: 503", srv.URL, 503, `{"status":"error","errorType":"unavailable","error":"busy"}`, VerdictError},
		{"garbage body", srv.URL, 200, `<html>not prometheus</html>`, VerdictError},
		{"truncated JSON", srv.URL, 200, `{"status":"success","data":{"resultType":"vector","result":[`, VerdictError},
		{"slow: past the timeout", srv.URL, 200, "hang", VerdictError},
		{"down: connection refused", down, 200, vectorBody("1"), VerdictError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status.Store(int32(tt.status))
			body.Store(tt.body)
			client, err := api.NewClient(api.Config{Address: tt.addr})
			if err != nil {
				t.Fatal(err)
			}
			// Generous for the answers (a loaded CI machine), short for the server that never answers.
			timeout := 10 * time.Second
			if tt.body == "hang" {
				timeout = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			got, err := queryEvaluator(promv1.NewAPI(client), "x > 0.5")(ctx)
			if failed := got == VerdictError || got == VerdictInvalid; got != tt.want || failed != (err != nil) {
				t.Fatalf("verdict %v (err %v), want %v", got, err, tt.want)
			}
		})
	}
}

// TestPrometheusTriggerSteersTheWindow drives a whole Engine from an HTTP Prometheus API on the real clock:
// firing halves the window, an empty vector lets it grow, and a 5xx within staleness keeps the last value.
func TestPrometheusTriggerSteersTheWindow(t *testing.T) {
	var status atomic.Int32
	var body atomic.Value
	status.Store(200)
	body.Store(vectorBody())
	srv := fakeProm(t, &status, &body)

	e := newEngine(Config[any, any]{DisableMetrics: true, PrometheusURL: srv.URL, Queries: []string{"backend_busy > 0.5"},
		Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, Staleness: time.Hour, WindowMin: 2, WindowMax: 64})
	defer e.Close()
	coretest.WaitFor(t, func() bool { return e.Status().Triggers[0].Verdict == "no_data" })
	grow(t, e, 32)

	body.Store(vectorBody("0.9"))
	coretest.WaitFor(t, func() bool { return e.Status().Window < 32 })
	coretest.WaitFor(t, func() bool { return e.Status().Window == 2 })
	if s := e.Status(); !s.GrowthHeld || !s.Triggers[0].Firing {
		t.Fatalf("firing query: %+v", s)
	}

	errorsBefore := e.Status().Triggers[0].Errors
	status.Store(503)
	body.Store(`{"status":"error","errorType":"unavailable","error":"busy"}`)
	coretest.WaitFor(t, func() bool { return e.Status().Triggers[0].Errors > errorsBefore })
	if s := e.Status().Triggers[0]; !s.Firing || !s.Held {
		t.Fatalf("5xx within staleness: %+v, want the last value (firing) held", s)
	}

	status.Store(200)
	body.Store(vectorBody("0"))
	coretest.WaitFor(t, func() bool { return e.Status().Triggers[0].Verdict == "false" && !e.Status().GrowthHeld })
	saturate(e.window, 2+3)
	if w := e.Status().Window; w != 4 {
		t.Fatalf("window %d after two rounds with the query false, want 4", w)
	}
	drain(e.window)
}

// TestInvalidQueryOverHTTP runs an invalid query through a real HTTP Prometheus API: 400 bad_data under
// fail-closed leaves the window free to grow and shows the trigger as invalid, in the status and the metrics.
// A 422 execution error, which depends on the data the query meets, is an error like any other: under
// fail-closed with no success yet it fires.
func TestInvalidQueryOverHTTP(t *testing.T) {
	logs := &logBuffer{}
	var status atomic.Int32
	var body atomic.Value
	srv := fakeProm(t, &status, &body)
	start := func(code int, answer string) (*Engine, *prometheus.Registry) {
		status.Store(int32(code))
		body.Store(answer)
		reg := prometheus.NewRegistry()
		e := newLoggedEngine(Config[any, any]{Registerer: reg, Name: "api", PrometheusURL: srv.URL,
			Triggers: []Trigger{{Name: "q", Query: "backend_busy >"}},
			Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, Staleness: 40 * time.Millisecond,
			FailMode: FailClosed, WindowMin: 2, WindowMax: 64}, logs)
		t.Cleanup(func() { e.Close() })
		coretest.WaitFor(t, func() bool { return e.Status().Triggers[0].Evaluations >= 5 }) // well past staleness
		return e, reg
	}
	const (
		invalid = `fiberguard_throttle_trigger_invalid{name="api",trigger="q"}`
		firing  = `fiberguard_throttle_trigger_firing{name="api",trigger="q"}`
	)

	e, reg := start(400, `{"status":"error","errorType":"bad_data","error":"1:15: parse error: unexpected end of input"}`)
	grow(t, e, 64)
	s := e.Status()
	if sig := s.Triggers[0]; !sig.Invalid || sig.Verdict != "invalid" || sig.Firing || s.GrowthHeld || s.Window != 64 {
		t.Fatalf("400 bad_data under fail-closed: %+v, want invalid, not firing, window 64", s)
	}
	got := coretest.Gather(t, reg)
	if got[invalid] != 1 || got[firing] != 0 {
		t.Errorf("%s = %v, %s = %v; want 1 and 0", invalid, got[invalid], firing, got[firing])
	}
	if v := got[`fiberguard_throttle_trigger_evaluations_total{name="api",trigger="q",verdict="invalid"}`]; v < 5 {
		t.Errorf("evaluations with verdict invalid = %v, want >= 5", v)
	}
	if want := `[Error] throttle: trigger "q": query "backend_busy >" is invalid`; strings.Count(logs.String(), want) != 1 {
		t.Errorf("want one error-level line naming the query (%s), got:\n%s", want, logs)
	}
	e.Close()

	e, reg = start(422, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`)
	if sig := e.Status().Triggers[0]; sig.Invalid || sig.Verdict != "error" || !sig.Stale || !sig.Firing || e.Status().Window != 2 {
		t.Fatalf("422 execution error under fail-closed: %+v, window %d; want stale, firing, window 2", sig, e.Status().Window)
	}
	if got := coretest.Gather(t, reg); got[invalid] != 0 || got[firing] != 1 {
		t.Errorf("%s = %v, %s = %v after 422s; want 0 and 1", invalid, got[invalid], firing, got[firing])
	}
}
