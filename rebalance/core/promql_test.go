package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// answer is what the fake Prometheus replies to one query.
type answer struct {
	code int
	body string
}

// query is one request the fake Prometheus got.
type query struct {
	expr string
	time string // the evaluation time, as sent
}

// fakePrometheus answers /api/v1/query with the answer for its query (a 400 for any other) and records the
// queries it got. The real server is exercised end to end in the e2e module; this pins the parsing.
func fakePrometheus(t *testing.T, answers map[string]answer) (*httptest.Server, func() []query) {
	t.Helper()
	var (
		mu      sync.Mutex
		queries []query
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		q := query{expr: r.Form.Get("query"), time: r.Form.Get("time")}
		mu.Lock()
		queries = append(queries, q)
		a, ok := answers[q.expr]
		mu.Unlock()
		if !ok {
			a = answer{400, `{"status":"error","errorType":"bad_data","error":"unexpected query"}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []query {
		mu.Lock()
		defer mu.Unlock()
		return append([]query(nil), queries...)
	}
}

// vectorAt is a vector answer whose samples, one per node, all carry the timestamp at.
func vectorAt(at time.Time, values ...string) answer {
	ts := strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i, v := range values {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"metric":{"instance":"n%d"},"value":[%s,"%s"]}`, i, ts, v)
	}
	b.WriteString(`]}}`)
	return answer{200, b.String()}
}

// seconds renders t as timestamp() does.
func seconds(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }

func promQL(t *testing.T, srv *httptest.Server, query, timestampQuery string) ClusterSource {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := api.NewClient(api.Config{Address: srv.URL, RoundTripper: tr})
	if err != nil {
		t.Fatal(err)
	}
	return PromQL(v1.NewAPI(c), query, timestampQuery)
}

func TestPromQLSource(t *testing.T) {
	// Prometheus stamps every sample of an instant query with the evaluation time; the age comes from the
	// timestamps that the timestamp query returns as values.
	now := time.Now().Truncate(time.Millisecond)
	old := now.Add(-time.Minute)
	scalar := func(v string) answer {
		return answer{200, `{"status":"success","data":{"resultType":"scalar","result":[` + seconds(now) + `,"` + v + `"]}}`}
	}
	badData := answer{400, `{"status":"error","errorType":"bad_data","error":"parse error"}`}

	tests := []struct {
		name       string
		values     answer
		timestamps answer
		average    float64
		nodes      int
		at         time.Time // the reading's age: the oldest timestamp
		err        error     // nil: success; errNotNil: any error
		queries    int       // queries sent
	}{
		{"one sample per node, as old as the oldest", vectorAt(now, "30", "60", "90"),
			vectorAt(now, seconds(now.Add(-time.Second)), seconds(now.Add(-2500*time.Millisecond)), seconds(now)),
			60, 3, now.Add(-2500 * time.Millisecond), nil, 2},
		{"a target that stopped: its last sample ages", vectorAt(now, "40", "40"),
			vectorAt(now, seconds(now), seconds(old)), 40, 2, old, nil, 2},
		{"samples older than their timestamps say", vectorAt(old, "40", "40"),
			vectorAt(now, seconds(now), seconds(now)), 40, 2, old, nil, 2},
		{"a scalar timestamp", vectorAt(now, "40", "40"), scalar(seconds(old)), 40, 2, old, nil, 2},
		{"timestamps that are not numbers are skipped", vectorAt(now, "40", "40"),
			vectorAt(now, "NaN", seconds(old), "+Inf", "1e300"), 40, 2, old, nil, 2},
		{"samples that are not counts are skipped", vectorAt(now, "30", "NaN", "+Inf", "-1", "50"),
			vectorAt(now, seconds(now), seconds(now)), 40, 2, now, nil, 2},
		{"counts whose sum overflows: an infinite average", vectorAt(now, "1e308", "1e308"),
			vectorAt(now, seconds(now), seconds(now)), math.Inf(1), 2, now, nil, 2},
		{"no live node: no reading, no timestamp query", vectorAt(now), answer{}, 0, 0, time.Time{}, nil, 1},
		{"only samples that are not counts: no reading", vectorAt(now, "NaN"), answer{}, 0, 0, time.Time{}, nil, 1},
		{"no timestamp for the nodes found", vectorAt(now, "40", "40"), vectorAt(now), 0, 0, time.Time{}, ErrNoTimestamp, 2},
		{"no timestamp that is a number", vectorAt(now, "40", "40"), vectorAt(now, "NaN", "-Inf"), 0, 0, time.Time{}, ErrNoTimestamp, 2},
		{"a timestamp query that fails", vectorAt(now, "40", "40"), badData, 0, 0, time.Time{}, errNotNil, 2},
		{"a scalar is not one sample per node", scalar("40"), answer{}, 0, 0, time.Time{}, ErrNotVector, 1},
		{"bad query", badData, answer{}, 0, 0, time.Time{}, errNotNil, 1},
		{"server error", answer{503, `unavailable`}, answer{}, 0, 0, time.Time{}, errNotNil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := map[string]answer{DefaultQuery: tt.values}
			if tt.timestamps.code != 0 {
				answers[DefaultTimestampQuery] = tt.timestamps
			}
			srv, queries := fakePrometheus(t, answers)
			r, err := promQL(t, srv, DefaultQuery, DefaultTimestampQuery)(context.Background())
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("error %v", err)
			case errors.Is(tt.err, errNotNil) && err == nil, tt.err != nil && !errors.Is(tt.err, errNotNil) && !errors.Is(err, tt.err):
				t.Fatalf("error %v, want %v", err, tt.err)
			case tt.err == nil && (r.Average != tt.average || r.Nodes != tt.nodes || !r.At.Equal(tt.at)):
				t.Fatalf("reading %+v, want average %v over %d nodes at %v", r, tt.average, tt.nodes, tt.at)
			}
			q := queries()
			if len(q) != tt.queries || q[0].expr != DefaultQuery ||
				(len(q) == 2 && (q[1].expr != DefaultTimestampQuery || q[1].time != q[0].time || q[0].time == "")) {
				t.Fatalf("queries %+v, want the query then %d-1 timestamp query at the same evaluation time", q, tt.queries)
			}
		})
	}
}

var errNotNil = errors.New("any error")

func TestPrometheusURLDrivesTheDefaultSource(t *testing.T) {
	now := time.Now()
	const (
		q  = `fiberguard_rebalance_open_connections{job="api"}`
		tq = `timestamp(fiberguard_rebalance_open_connections{job="api"})`
	)
	srv, queries := fakePrometheus(t, map[string]answer{
		q:  vectorAt(now, "30", "40", "50"),
		tq: vectorAt(now, seconds(now), seconds(now), seconds(now)),
	})
	e := NewEngine(Config[any, any]{
		PrometheusURL:  srv.URL,
		Query:          q,
		TimestampQuery: tq,
		Connections:    func() int { return 60 },
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}.WithDefaults(Defaults[any, any]()), nil)
	defer e.Close()
	e.Evaluate(context.Background())
	if st := e.Status(); st.Decision != DecisionShedding || st.Average != 40 || st.Nodes != 3 || st.Budget != 1 {
		t.Fatalf("status %+v, want shedding 1 against an average of 40 over 3 nodes", st)
	}
	if got := queries(); len(got) != 2 || got[0].expr != q || got[1].expr != tq {
		t.Fatalf("queries %+v, want Config.Query then Config.TimestampQuery", got)
	}
}

// TestPrometheusAgeDecides: with the default source, a Prometheus that answers but whose samples are older than
// MaxAge stops shedding, and an empty answer (every target down) is no average, never a fresh reading.
func TestPrometheusAgeDecides(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name       string
		values     answer
		timestamps answer
		decision   Decision
	}{
		{"fresh samples", vectorAt(now, "40", "40", "40"), vectorAt(now, seconds(now), seconds(now), seconds(now)), DecisionShedding},
		{"one node's samples older than MaxAge", vectorAt(now, "40", "40", "40"),
			vectorAt(now, seconds(now), seconds(now.Add(-10*time.Second)), seconds(now)), DecisionStale},
		{"no live node", vectorAt(now), answer{}, DecisionNoAverage},
		{"no timestamp", vectorAt(now, "40", "40", "40"), vectorAt(now), DecisionSourceError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			answers := map[string]answer{DefaultQuery: tt.values}
			if tt.timestamps.code != 0 {
				answers[DefaultTimestampQuery] = tt.timestamps
			}
			srv, _ := fakePrometheus(t, answers)
			e := NewEngine(Config[any, any]{
				PrometheusURL:  srv.URL,
				Connections:    func() int { return 60 },
				MinConnections: 10,
				Registerer:     prometheus.NewRegistry(),
			}.WithDefaults(Defaults[any, any]()), nil)
			defer e.Close()
			e.Evaluate(context.Background())
			st := e.Status()
			if st.Decision != tt.decision || (tt.decision != DecisionShedding && st.Budget != 0) {
				t.Fatalf("status %+v, want %s", st, tt.decision)
			}
			if tt.decision == DecisionNoAverage && (st.Nodes != 0 || st.Average != 0) {
				t.Fatalf("status %+v, want no nodes and no average", st)
			}
		})
	}
}

// countingRoundTripper counts the requests it carries.
type countingRoundTripper struct {
	next  http.RoundTripper
	count atomic.Int64
}

func (c *countingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.RoundTrip(req)
}

// TestRoundTripperCarriesThePrometheusQueries: the default source sends both queries through
// Config.RoundTripper, and Close leaves the caller's transport and its idle connection alone.
func TestRoundTripperCarriesThePrometheusQueries(t *testing.T) {
	now := time.Now()
	srv, queries := fakePrometheus(t, map[string]answer{
		DefaultQuery:          vectorAt(now, "30", "40", "50"),
		DefaultTimestampQuery: vectorAt(now, seconds(now), seconds(now), seconds(now)),
	})
	var dials atomic.Int64
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	rt := &countingRoundTripper{next: tr}
	e := NewEngine(Config[any, any]{
		PrometheusURL:  srv.URL,
		RoundTripper:   rt,
		Interval:       maxInterval, // one interval only before Close
		Connections:    func() int { return 60 },
		MinConnections: 10,
		Registerer:     prometheus.NewRegistry(),
	}.WithDefaults(Defaults[any, any]()), nil)
	e.Start()
	waitFor(t, func() bool { return e.Status().Decision == DecisionShedding })
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got, sent := rt.count.Load(), len(queries()); got != 2 || sent != 2 {
		t.Fatalf("the RoundTripper carried %d requests and Prometheus got %d, want the 2 queries of one interval", got, sent)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := dials.Load(); got != 1 {
		t.Fatalf("%d dials, want 1: Close must not close the idle connection of the caller's transport", got)
	}
}
