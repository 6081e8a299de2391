package rebalance

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkRebalance drives a handler chain with one request and one httptest.ResponseRecorder: bare is the final
// handler alone; passthrough a middleware that only calls next.ServeHTTP (the floor of any net/http middleware);
// accept a balanced node (no budget: the path of nearly every request); shedding a node with budget left, every
// request closing its connection.
func BenchmarkRebalance(b *testing.B) {
	final := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	run := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		rec := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(rec, req)
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, final) })
	b.Run("passthrough", func(b *testing.B) {
		mw := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
		}
		run(b, mw(final))
	})
	b.Run("accept", func(b *testing.B) {
		r := afterOneInterval(b, false)
		defer r.Close()
		run(b, r.Handler()(final))
	})
	b.Run("shedding", func(b *testing.B) {
		r := afterOneInterval(b, true)
		defer r.Close()
		run(b, r.Handler()(final))
	})
}

// afterOneInterval is a Rebalancer after its first interval, whose next one is 10 minutes away: balanced, with no
// budget, or shedding with a budget no run spends (2^40 connections against an average of 2^30 at ShedRate 1:
// 2^30 connections).
func afterOneInterval(tb testing.TB, shedding bool) *Rebalancer {
	tb.Helper()
	local, average := 60, 60.0
	if shedding {
		local, average = 1<<40, 1<<30
	}
	r := NewRebalancer(Config{
		Cluster:        fixed(average, 3),
		Connections:    func() int { return local },
		Interval:       10 * time.Minute,
		ShedRate:       1,
		MinConnections: -1,
		DisableMetrics: true,
	})
	wait(tb, func() bool { return r.Status().UpdatedAt != nil })
	if st := r.Status(); (st.Budget > 0) != shedding {
		tb.Fatalf("status %+v, want shedding %v", st, shedding)
	}
	return r
}
