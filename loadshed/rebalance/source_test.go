package rebalance

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// fakePrometheus answers /api/v1/query with body (status code code) and records the queries it got. The real
// server is exercised end to end in the e2e module; this pins the parsing.
func fakePrometheus(t *testing.T, code int, body string) (*httptest.Server, func() []string) {
	t.Helper()
	var (
		mu      sync.Mutex
		queries []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		mu.Lock()
		queries = append(queries, r.Form.Get("query"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), queries...)
	}
}

func vectorBody(values ...string) string {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i, v := range values {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"metric":{"instance":"n` + string(rune('0'+i)) + `"},"value":[1700000000,"` + v + `"]}`)
	}
	b.WriteString(`]}}`)
	return b.String()
}

func promQL(t *testing.T, srv *httptest.Server, query string) Source {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := api.NewClient(api.Config{Address: srv.URL, RoundTripper: tr})
	if err != nil {
		t.Fatal(err)
	}
	return PromQL(v1.NewAPI(c), query)
}

func TestPromQLSource(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		body    string
		average float64
		nodes   int
		err     error // nil: success; errNotNil: any error
	}{
		{"one sample per node", 200, vectorBody("30", "60", "90"), 60, 3, nil},
		{"samples that are not counts are skipped", 200, vectorBody("30", "NaN", "+Inf", "-1", "50"), 40, 2, nil},
		{"no live node", 200, vectorBody(), 0, 0, nil},
		{"a scalar is not one sample per node", 200, `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"40"]}}`, 0, 0, ErrNotVector},
		{"bad query", 400, `{"status":"error","errorType":"bad_data","error":"parse error"}`, 0, 0, errNotNil},
		{"server error", 503, `unavailable`, 0, 0, errNotNil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, queries := fakePrometheus(t, tt.code, tt.body)
			before := time.Now()
			r, err := promQL(t, srv, DefaultQuery)(context.Background())
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("error %v", err)
			case errors.Is(tt.err, errNotNil) && err == nil, tt.err != nil && !errors.Is(tt.err, errNotNil) && !errors.Is(err, tt.err):
				t.Fatalf("error %v, want %v", err, tt.err)
			case tt.err == nil && (r.Average != tt.average || r.Nodes != tt.nodes || r.At.Before(before)):
				t.Fatalf("reading %+v, want average %v over %d nodes taken now", r, tt.average, tt.nodes)
			}
			if q := queries(); len(q) != 1 || q[0] != DefaultQuery {
				t.Fatalf("queries %q, want the default query once", q)
			}
		})
	}
}

var errNotNil = errors.New("any error")

func TestPrometheusURLDrivesTheDefaultSource(t *testing.T) {
	srv, queries := fakePrometheus(t, 200, vectorBody("30", "40", "50"))
	r := newRebalancer(configDefault(Config{
		PrometheusURL:  srv.URL,
		Query:          `fiberguard_rebalance_open_connections{job="api"}`,
		Connections:    func() int { return 60 },
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}))
	defer r.release()
	r.tick(context.Background())
	if st := r.Status(); st.State != StateShedding || st.Average != 40 || st.Nodes != 3 || st.Budget != 1 {
		t.Fatalf("status %+v, want shedding 1 against an average of 40 over 3 nodes", st)
	}
	if q := queries(); len(q) != 1 || q[0] != `fiberguard_rebalance_open_connections{job="api"}` {
		t.Fatalf("queries %q, want Config.Query", q)
	}
}
