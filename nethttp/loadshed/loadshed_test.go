// The adapter's tests that every version shares run in e2e/glue (TestLoadshed/net-http); these are the ones
// only net/http has.
package loadshed_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"github.com/fiberguard/fiberguard/nethttp/loadshed"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// shedder builds a Shedder on a private registry with smoothing off, so the load is the signal's.
func shedder(t *testing.T, cfg loadshed.Config) (*loadshed.Shedder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	s := loadshed.NewShedder(cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s, reg
}

// ok answers every request with 200 "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// The rejection headers' values are shared by every rejected response; a handler that adds to them, or a
// middleware that edits the response header after the shedder, must not change what the next rejection sends.
func TestSharedHeaderValuesStayIntact(t *testing.T) {
	if core.HeaderRetryAfter != http.CanonicalHeaderKey(core.HeaderRetryAfter) ||
		core.HeaderRejectedBy != http.CanonicalHeaderKey(core.HeaderRejectedBy) {
		t.Fatal("the rejection header keys must be canonical: the middleware assigns them to the header map")
	}
	s, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1), Name: "api",
		OnReject: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Add("Retry-After", "7")
			w.Header().Add("Fiberguard-Rejected-By", "other")
			w.WriteHeader(http.StatusServiceUnavailable)
		})})
	h := s.Handler()(ok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Values("Retry-After"); len(got) != 2 || got[0] != "1" || got[1] != "7" {
		t.Fatalf("first rejection: Retry-After %q, want [1 7]", got)
	}
	for range 2 {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := rec.Header().Values("Retry-After"); len(got) != 2 || got[0] != "1" {
			t.Fatalf("next rejection: Retry-After %q, want [1 7]", got)
		}
		if got := rec.Header().Values("Fiberguard-Rejected-By"); len(got) != 2 || got[0] != "loadshed/api" {
			t.Fatalf("next rejection: Fiberguard-Rejected-By %q, want [loadshed/api other]", got)
		}
	}

	// The default OnReject's Content-Type, edited by a later middleware.
	d, _ := shedder(t, loadshed.Config{Signal: coretest.NewFixedLoad(1)})
	h = d.Handler()(ok)
	for range 2 {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := rec.Header().Values("Content-Type"); len(got) != 1 || got[0] != "text/plain; charset=utf-8" {
			t.Fatalf("Content-Type %q", got)
		}
		rec.Header().Add("Content-Type", "x")
		rec.Header().Add("Retry-After", "x")
		rec.Header().Add("Fiberguard-Rejected-By", "x")
	}
}

// Over a real server: the rejection on the wire, and a panic net/http's own recovery catches (no middleware
// recovers it) leaves nothing in flight.
func TestOverARealServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	load := coretest.NewFixedLoad(1)
	s, _ := shedder(t, loadshed.Config{Signal: load, Interval: time.Millisecond, Name: "api",
		Next: func(r *http.Request) bool { return r.URL.Path == "/healthz" }})
	defer s.Close() // before VerifyNone; Close is idempotent
	mux := http.NewServeMux()
	mux.Handle("GET /", ok)
	mux.HandleFunc("GET /panics", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	srv := httptest.NewUnstartedServer(s.Handler()(mux))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()

	fetch := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	resp, body := fetch("/")
	if resp.StatusCode != 503 || body != "loadshed: overloaded, retry later\n" || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Fiberguard-Rejected-By") != "loadshed/api" ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("rejection over the wire: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body = fetch("/healthz"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("/healthz at load 1: %d %q", resp.StatusCode, body)
	}

	load.Set(0)
	deadline := time.Now().Add(10 * time.Second)
	for s.Status().Probability != 0 { // the sampler reads the new load
		if time.Now().After(deadline) {
			t.Fatalf("the load never fell: %+v", s.Status())
		}
		time.Sleep(time.Millisecond)
	}
	if resp, body = fetch("/"); resp.StatusCode != 200 || body != "ok" || resp.Header.Get("Fiberguard-Rejected-By") != "" {
		t.Fatalf("at load 0: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if _, err := client.Get(srv.URL + "/panics"); err == nil {
		t.Fatal("a handler that panics with http.ErrAbortHandler: the response was not aborted")
	}
	// Done runs as the panic unwinds, before the server closes the connection the client saw end.
	for s.Status().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d in flight after the panicking request", s.Status().InFlight)
		}
		time.Sleep(time.Millisecond)
	}
	client.CloseIdleConnections()
}

// A nil handler func is a zero OnReject: it takes the default's; a ConfigDefault without one cannot be served.
func TestNilHandlerFuncOnReject(t *testing.T) {
	s := loadshed.NewShedder(loadshed.Config{OnReject: http.HandlerFunc(nil), DisableMetrics: true,
		Signal: core.SignalFunc(func() (float64, error) { return 1, nil })})
	defer s.Close()
	rec := httptest.NewRecorder()
	s.Handler()(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || rec.Body.String() != "loadshed: overloaded, retry later\n" {
		t.Fatalf("OnReject http.HandlerFunc(nil): %d %q, want the default rejection", rec.Code, rec.Body.String())
	}
	saved := loadshed.ConfigDefault
	defer func() { loadshed.ConfigDefault = saved }()
	loadshed.ConfigDefault.OnReject = http.HandlerFunc(nil)
	defer func() {
		if msg, _ := recover().(string); msg != "loadshed: Config.OnReject must not be nil" {
			t.Fatalf("ConfigDefault.OnReject nil: panic %q, want one naming Config.OnReject", msg)
		}
	}()
	loadshed.NewShedder(loadshed.Config{DisableMetrics: true})
}
