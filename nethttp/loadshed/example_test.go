package loadshed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/fiberguard/fiberguard/nethttp/loadshed"
)

// The default: shed by the CPU the process may use; a rejection is a 503 with Retry-After and
// Fiberguard-Rejected-By headers.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	srv := &http.Server{Addr: ":3000", Handler: loadshed.New()(mux), ReadHeaderTimeout: 10 * time.Second}
	_ = srv // srv.ListenAndServe()
}

// A Shedder owns its sampler: Close stops it. Status feeds a status page.
func ExampleNewShedder() {
	s := loadshed.NewShedder(loadshed.Config{
		// A custom signal pinned above Upper, so every ordinary request is shed.
		Signal:         loadshedcore.SignalFunc(func() (float64, error) { return 0.97, nil }),
		Critical:       func(r *http.Request) bool { return r.Header.Get("X-Priority") == "critical" },
		Next:           func(r *http.Request) bool { return r.URL.Path == "/healthz" },
		DisableMetrics: true,
	})
	defer s.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	h := s.Handler()(mux)

	for _, r := range []struct{ path, priority string }{{"/", ""}, {"/", "critical"}, {"/healthz", ""}} {
		req := httptest.NewRequest(http.MethodGet, r.path, nil)
		req.Header.Set("X-Priority", r.priority)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s priority=%q: %d Retry-After=%q Fiberguard-Rejected-By=%q\n", r.path, r.priority,
			rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Fiberguard-Rejected-By"))
	}
	st := s.Status()
	fmt.Printf("%s: load %.2f, rejected %d, critical admitted %d\n", st.Name, st.Load, st.Rejected, st.CriticalAdmitted)
	// Output:
	// / priority="": 503 Retry-After="1" Fiberguard-Rejected-By="loadshed/default"
	// / priority="critical": 200 Retry-After="" Fiberguard-Rejected-By=""
	// /healthz priority="": 200 Retry-After="" Fiberguard-Rejected-By=""
	// default: load 0.97, rejected 1, critical admitted 1
}

// OnReject answers a rejected request; the Retry-After and Fiberguard-Rejected-By headers are already set.
func ExampleConfig_onReject() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mw := loadshed.New(loadshed.Config{
		Signal:     loadshedcore.SignalFunc(func() (float64, error) { return 1, nil }),
		Name:       "api",
		RetryAfter: 10 * time.Second,
		OnReject: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "overloaded"})
		}),
		DisableMetrics: true,
		Context:        ctx, // stops the sampler when done
	})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Print(rec.Code, " ", rec.Header().Get("Retry-After"), " ", rec.Header().Get("Fiberguard-Rejected-By"), " ", rec.Body.String())
	// Output: 429 10 loadshed/api {"error":"overloaded"}
}

// Dry-run counts what would be rejected and serves everything.
func ExampleConfig_dryRun() {
	s := loadshed.NewShedder(loadshed.Config{
		Signal:         loadshedcore.SignalFunc(func() (float64, error) { return 1, nil }),
		DryRun:         true,
		DisableMetrics: true,
	})
	defer s.Close()
	h := s.Handler()(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(rec.Code, s.Status().Rejected)
	// Output: 200 1
}

// Probability is the decision curve.
func ExampleProbability() {
	for _, load := range []float64{0.5, 0.90, 0.925, 0.95, 1} {
		fmt.Printf("%.3f → %.2f\n", load, loadshedcore.Probability(load, 0.90, 0.95))
	}
	// Output:
	// 0.500 → 0.00
	// 0.900 → 0.00
	// 0.925 → 0.50
	// 0.950 → 1.00
	// 1.000 → 1.00
}
