package throttle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	throttlecore "github.com/fiberguard/fiberguard/throttle/core"

	"github.com/fiberguard/fiberguard/nethttp/throttle"
)

// Throttle a backend by PromQL triggers: the window halves while the backend's p99 latency is above 250 ms or
// its queue is longer than 100, and grows while neither fires.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops the trigger goroutines and unregisters the metrics

	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	mw := throttle.New(throttle.Config{
		Context:       ctx,
		PrometheusURL: "http://127.0.0.1:9090",
		Queries: []string{
			`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="backend"}[1m]))) > 0.25`,
			`max(backend_queue_length) > bool 100`,
		},
		WindowMin: 10,
		WindowMax: 100,
	})
	srv := &http.Server{Addr: ":3000", Handler: mw(mux), ReadHeaderTimeout: 10 * time.Second}
	_ = srv // srv.ListenAndServe()
}

// An in-process trigger: a local queue length, evaluated every 100 ms, no Prometheus needed. The Throttler handle
// serves its Status to a status page and stops its goroutine on Close.
func ExampleNewThrottler() {
	var queued atomic.Int64 // maintained by the application
	th := throttle.NewThrottler(throttle.Config{
		WindowMin:      10,
		WindowMax:      100,
		DisableMetrics: true,
		Triggers: []throttlecore.Trigger{{
			Name:     "queue",
			Interval: 100 * time.Millisecond,
			Func: func(context.Context) (bool, error) {
				return queued.Load() > 50, nil
			},
		}},
	})
	defer th.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(th.Status()) })
	_ = th.Handler()(mux)

	s := th.Status()
	fmt.Printf("window %d in [%d, %d], trigger %s\n", s.Window, s.WindowMin, s.WindowMax, s.Triggers[0].Name)
	// Output: window 10 in [10, 100], trigger queue
}

// The view for a status page: a fresh value, JSON-tagged. updated_at stays null until a trigger is evaluated.
func ExampleThrottler_Status() {
	th := throttle.NewThrottler(throttle.Config{Name: "api", WindowMin: 10, WindowMax: 100, DisableMetrics: true})
	defer th.Close()

	b, _ := json.Marshal(th.Status())
	fmt.Println(string(b))
	// Output: {"name":"api","updated_at":null,"window":10,"in_flight":0,"window_min":10,"window_max":100,"growth_held":false,"admitted":0,"rejected":0,"triggers":[]}
}

// A custom rejection: by the time OnReject runs, the middleware has set Retry-After and Fiberguard-Rejected-By.
func ExampleConfig_onReject() {
	th := throttle.NewThrottler(throttle.Config{
		Name:           "api",
		WindowMin:      1,
		WindowMax:      1,
		RetryAfter:     5 * time.Second,
		DisableMetrics: true,
		OnReject: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "busy", "rejected_by": w.Header().Get("Fiberguard-Rejected-By")})
		}),
	})
	defer th.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	h := th.Handler()(mux)

	// One request in /slow fills the window of 1; the next one is rejected.
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/slow", nil))
	}()
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	close(release)
	<-done
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Fiberguard-Rejected-By"))
	fmt.Print(rec.Body.String())
	// Output:
	// 429 5 throttle/api
	// {"error":"busy","rejected_by":"throttle/api"}
}
