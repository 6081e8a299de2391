package glue

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	loadshedhttp "github.com/fiberguard/fiberguard/nethttp/loadshed"
	rebalancehttp "github.com/fiberguard/fiberguard/nethttp/rebalance"
	throttlehttp "github.com/fiberguard/fiberguard/nethttp/throttle"
	upstreampickhttp "github.com/fiberguard/fiberguard/nethttp/upstreampick"
)

// BenchmarkNetHTTP is the accept path of every net/http middleware in one run, beside a pass-through middleware
// (a func(http.Handler) http.Handler that only calls the next handler), through an httptest recorder reused
// across iterations, so that the figures are the middlewares' own.
func BenchmarkNetHTTP(b *testing.B) {
	final := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	passthrough := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
	}
	shed := loadshedhttp.NewShedder(loadshedhttp.Config{Signal: coretest.NewFixedLoad(0.5), Smoothing: 1, DisableMetrics: true})
	defer shed.Close()
	th := throttlehttp.NewThrottler(throttlehttp.Config{WindowMin: 100, WindowMax: 100, DisableMetrics: true})
	defer th.Close()
	rb := rebalancehttp.NewRebalancer(rebalancehttp.Config{DisableMetrics: true, Connections: func() int { return 1 },
		Cluster: func(context.Context) (rebalancecore.Cluster, error) {
			return rebalancecore.Cluster{Average: 1, Nodes: 2}, nil
		}})
	defer rb.Close()
	// upstreampick's accept path proxies to an upstream; what it adds before the proxy is a skip by Next.
	picker := upstreampickhttp.NewPicker(upstreampickhttp.Config{Servers: []string{"127.0.0.1:1"}, DisableMetrics: true,
		Next: func(*http.Request) bool { return true }})
	defer picker.Close()
	for _, tc := range []struct {
		name string
		mw   func(http.Handler) http.Handler
	}{
		{"passthrough", passthrough},
		{"loadshed_accept", shed.Handler()},
		{"throttle_admitted", th.Handler()},
		{"rebalance_balanced", rb.Handler()},
		{"upstreampick_next", picker.Handler()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := tc.mw(final)
			req, rec := httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(rec, req)
			}
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d, want 200", rec.Code)
			}
		})
	}
}
