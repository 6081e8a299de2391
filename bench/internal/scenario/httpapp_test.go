package scenario

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestNewHTTPApp: the middleware guards GET /work, GET /ok and unrouted paths, as app.Use does in the Fiber app,
// and not GET /healthz, GET /procs or GET /stats, which the driver reads while the app sheds.
func TestNewHTTPApp(t *testing.T) {
	var guarded []string
	h := NewHTTPApp(HTTPAppSpec{
		Work: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("work")) }),
		Middleware: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				guarded = append(guarded, r.URL.Path)
				next.ServeHTTP(w, r)
			})
		},
		Stats: func() any { return map[string]int{"n": 1} },
	})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	for path, want := range map[string]string{
		"/work":    "work",
		"/ok":      "ok",
		"/healthz": "ok",
		"/procs":   strconv.Itoa(runtime.GOMAXPROCS(0)) + "\n",
		"/stats":   `{"n":1}` + "\n",
	} {
		if code, body := get(path); code != http.StatusOK || body != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, code, body, want)
		}
	}
	if code, _ := get("/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", code)
	}
	got := strings.Join(guarded, ",")
	if !strings.Contains(got, "/work") || !strings.Contains(got, "/ok") || !strings.Contains(got, "/nope") ||
		strings.Contains(got, "/healthz") || strings.Contains(got, "/procs") || strings.Contains(got, "/stats") {
		t.Errorf("the middleware saw %s; want /work, /ok and /nope only", got)
	}
}

func TestNewHTTPAppBare(t *testing.T) {
	h := NewHTTPApp(HTTPAppSpec{Work: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})})
	for path, want := range map[string]int{"/work": http.StatusOK, "/stats": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("no middleware, no stats: GET %s: %d, want %d", path, rec.Code, want)
		}
	}
}
