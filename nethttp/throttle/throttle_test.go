// The adapter's tests that every version shares run in e2e/glue (TestThrottle/net-http); these are the ones
// only net/http has.
package throttle_test

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fiberguard/fiberguard/nethttp/throttle"
	"github.com/fiberguard/fiberguard/throttle/core"
	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"go.uber.org/goleak"
)

const defaultBody = "throttle: concurrency limit reached, retry later\n"

// blockingMux serves /block until release is closed, telling entered when a request is inside the handler;
// /ok answers at once.
func blockingMux(entered chan<- struct{}, release <-chan struct{}) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return mux
}

// serve runs one GET through h in memory.
func serve(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// occupied serves a blockingMux behind th with one request parked in /block; release lets it finish and waits.
func occupied(th *throttle.Throttler) (h http.Handler, release func()) {
	entered, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	h = th.Handler()(blockingMux(entered, unblock))
	go func() { defer close(done); serve(h, "/block") }()
	<-entered
	return h, func() { close(unblock); <-done }
}

// The rejection headers' values are shared by every rejected response; a handler that adds to them, or a
// middleware that edits the response header after the throttle, must not change what the next rejection sends.
func TestSharedHeaderValuesStayIntact(t *testing.T) {
	if core.HeaderRetryAfter != http.CanonicalHeaderKey(core.HeaderRetryAfter) ||
		core.HeaderRejectedBy != http.CanonicalHeaderKey(core.HeaderRejectedBy) {
		t.Fatal("the rejection header keys must be canonical: the middleware assigns them to the header map")
	}
	th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true, Name: "api"})
	defer th.Close()
	h, release := occupied(th)
	defer release()
	for range 3 {
		rec := serve(h, "/ok")
		for key, want := range map[string]string{"Retry-After": "1", "Fiberguard-Rejected-By": "throttle/api",
			"Content-Type": "text/plain; charset=utf-8"} {
			if got := rec.Header().Values(key); len(got) != 1 || got[0] != want {
				t.Fatalf("%s %q, want [%s]", key, got, want)
			}
			rec.Header().Add(key, "x") // a later middleware adding to the response's header
		}
	}
}

// Over a real server: a window of 1 held by a request in flight rejects the next one on the wire, and a panic
// net/http's own recovery catches (no middleware recovers it) gives the slot back.
func TestOverARealServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	th := throttle.NewThrottler(throttle.Config{WindowMin: 1, WindowMax: 1, DisableMetrics: true, Name: "api"})
	defer th.Close()
	entered, unblock := make(chan struct{}), make(chan struct{})
	mux := blockingMux(entered, unblock)
	mux.HandleFunc("GET /abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	srv := httptest.NewUnstartedServer(th.Handler()(mux))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()

	fetch := func(path string) (*http.Response, string, error) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	blocked := make(chan error, 1)
	go func() {
		resp, body, err := fetch("/block")
		if err == nil && (resp.StatusCode != 200 || body != "ok") {
			err = errors.New("the parked request got " + resp.Status + " " + body)
		}
		blocked <- err
	}()
	<-entered
	resp, body, err := fetch("/ok")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || body != defaultBody || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Fiberguard-Rejected-By") != "throttle/api" ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("rejection over the wire: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	close(unblock)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}

	if _, _, err := fetch("/abort"); err == nil {
		t.Fatal("a handler that panics with http.ErrAbortHandler: the response was not aborted")
	}
	// The slot comes back as the panic unwinds, before the server closes the connection the client saw end.
	coretest.WaitFor(t, func() bool { return th.Status().InFlight == 0 })
	if resp, body, err = fetch("/ok"); err != nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("after the aborted request: %v %v %q", err, resp, body)
	}
	client.CloseIdleConnections()
}

// A nil handler func is a zero OnReject: it takes the default's; a ConfigDefault without one cannot be served.
func TestNilHandlerFuncOnReject(t *testing.T) {
	saved := throttle.ConfigDefault
	defer func() { throttle.ConfigDefault = saved }()
	throttle.ConfigDefault.OnReject = http.HandlerFunc(nil)
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "Config.OnReject must not be nil") {
			t.Fatalf("ConfigDefault.OnReject nil: panic %q, want one naming Config.OnReject", msg)
		}
	}()
	throttle.NewThrottler(throttle.Config{OnReject: http.HandlerFunc(nil), DisableMetrics: true})
}
