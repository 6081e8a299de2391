package fasthttpclient

import (
	"errors"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// rejectingEngine returns an Engine over cfg once its upstreams are unhealthy, so that it rejects every request.
func rejectingEngine(t *testing.T, n *memnet.Net, cfg config) engine {
	t.Helper()
	p := picker(n, cfg)
	eventually(t, "upstreams unhealthy", func() bool { return allUnhealthy(p) })
	return p
}

// rejectedMetric returns requests_total{decision="rejected"} of reg.
func rejectedMetric(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fiberguard_upstreampick_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "decision" && l.GetValue() == "rejected" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatal("no requests_total{decision=\"rejected\"} series")
	return 0
}

// TestRejectCountsOnce: a request the balancer rejected is not counted again by Reject, however often Reject is
// called for it; a request Reject sees first is counted once; a request reset for reuse (as a server does) is a
// new request.
func TestRejectCountsOnce(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		reg := prometheus.NewRegistry()
		cfg := testConfig("10.0.0.9:80") // nothing answers there
		cfg.Registerer, cfg.Name, cfg.RetryAfter = reg, "edge", 2500*time.Millisecond
		p := rejectingEngine(t, n, cfg)
		check := func(what string, want uint64) {
			t.Helper()
			if st := p.Status(); st.Rejected != want || st.Admitted != 0 {
				t.Fatalf("%s: rejected %d admitted %d, want %d and 0", what, st.Rejected, st.Admitted, want)
			}
			if got := rejectedMetric(t, reg); got != float64(want) {
				t.Fatalf("%s: rejected metric %v, want %d", what, got, want)
			}
		}

		var req fasthttp.Request
		var resp fasthttp.Response
		req.SetRequestURI("http://gateway/")
		if err := p.LBClient().Do(&req, &resp); !errors.Is(err, ErrNoUpstream) {
			t.Fatalf("LBClient error %v, want the default noUpstream", err)
		}
		check("LBClient rejected it", 1)
		p.SetRejectHeaders(&req, &resp.Header)
		p.SetRejectHeaders(&req, &resp.Header)
		check("Reject after LBClient", 1)
		if got := string(resp.Header.Peek("Retry-After")); got != "3" {
			t.Fatalf("Retry-After %q, want 3", got)
		}
		if got := string(resp.Header.Peek("Fiberguard-Rejected-By")); got != "upstreampick/edge" {
			t.Fatalf("Fiberguard-Rejected-By %q, want upstreampick/edge", got)
		}

		// A request nothing counted yet (after a Pick that found nothing, say).
		if _, ok := p.Pick(); ok {
			t.Fatal("Pick found an upstream")
		}
		var other fasthttp.Request
		var otherResp fasthttp.Response
		p.SetRejectHeaders(&other, &otherResp.Header)
		p.SetRejectHeaders(&other, &otherResp.Header)
		check("Reject alone", 2)

		// Reset, the first request is another one.
		req.Reset()
		p.SetRejectHeaders(&req, &resp.Header)
		check("Reject after a reset", 3)

		// Another Picker's count is its own.
		cfg2 := testConfig("10.0.0.8:80")
		cfg2.Name = "other"
		q := rejectingEngine(t, n, cfg2)
		var shared fasthttp.Request
		if err := q.BalancingClient().DoDeadline(&shared, &fasthttp.Response{}, time.Now().Add(time.Second)); !errors.Is(err, ErrNoUpstream) {
			t.Fatalf("other picker: %v", err)
		}
		p.SetRejectHeaders(&shared, &otherResp.Header)
		check("Reject of a request another Picker rejected", 4)
		if st := q.Status(); st.Rejected != 1 {
			t.Fatalf("other picker rejected %d, want 1", st.Rejected)
		}
	})
}

func TestRejectWithoutRetryAfter(t *testing.T) {
	p := newEngine(config{Servers: []string{"127.0.0.1:1"}, RetryAfter: -1, HealthInterval: time.Hour,
		Dial: refuse, DisableMetrics: true})
	defer func() { _ = p.Close() }()
	var resp fasthttp.Response
	p.SetRejectHeaders(&fasthttp.Request{}, &resp.Header)
	if resp.Header.Peek("Retry-After") != nil || string(resp.Header.Peek("Fiberguard-Rejected-By")) != "upstreampick/default" {
		t.Fatalf("headers %q", resp.Header.Header())
	}
}

func TestNoUpstreamIsTheAdaptersError(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		mine := errors.New("mine")
		p := pickerWith(n, testConfig("10.0.0.9:80"), quiet{}, mine)
		eventually(t, "upstreams unhealthy", func() bool { return allUnhealthy(p) })
		if err := do(p); !errors.Is(err, mine) {
			t.Fatalf("LBClient error %v, want NewEngine's noUpstream", err)
		}
		var c fasthttp.RequestCtx
		if got := p.Proxy(&c.Request, &c.Response); got != Rejected {
			t.Fatalf("Proxy = %v, want Rejected", got)
		}
		if st := p.Status(); st.Rejected != 2 {
			t.Fatalf("rejected %d, want 2", st.Rejected)
		}
	})
}
