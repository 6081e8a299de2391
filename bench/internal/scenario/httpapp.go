package scenario

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"time"
)

// HTTPAppSpec is what the net/http app serves: AppSpec's routes with the standard library's types.
type HTTPAppSpec struct {
	// Work answers GET /work.
	Work http.Handler
	// Middleware guards /work, /ok and any other path, not /healthz, /procs or /stats, as AppSpec's does
	// (app.Use before the routes it guards).
	Middleware func(http.Handler) http.Handler
	// Stats, if set, answers GET /stats as JSON.
	Stats func() any
}

// NewHTTPApp returns the scenario app on the standard library's ServeMux: GET /healthz, GET /procs (GOMAXPROCS),
// GET /stats, then, through the middleware, GET /work and GET /ok (does nothing).
func NewHTTPApp(spec HTTPAppSpec) http.Handler {
	guarded := http.NewServeMux()
	guarded.Handle("GET /work", spec.Work)
	guarded.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	var rest http.Handler = guarded
	if spec.Middleware != nil {
		rest = spec.Middleware(guarded)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /procs", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, runtime.GOMAXPROCS(0)) })
	if spec.Stats != nil {
		mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, spec.Stats()) })
	}
	mux.Handle("/", rest)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// ListenHTTP serves h on addr with the standard library's server and its defaults, as an app would, until the
// process is killed. ReadHeaderTimeout only bounds a client that never sends its headers; the load generator
// always does.
func ListenHTTP(h http.Handler, addr string) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}
