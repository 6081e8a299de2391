package fiberapp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/nethttp/loadshed"
	"github.com/fiberguard/fiberguard/nethttp/rebalance"
	"github.com/fiberguard/fiberguard/nethttp/throttle"
	"github.com/fiberguard/fiberguard/nethttp/upstreampick"
	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"
)

type netHTTP struct{}

func (netHTTP) Name() string { return "net-http" }

func (netHTTP) NewApp() App {
	a := &appNet{}
	a.open.Store(-1)
	// ReadHeaderTimeout only bounds a client that never finishes its headers; no test request comes near it.
	a.srv = &http.Server{Handler: http.HandlerFunc(a.serveHTTP), ConnState: a.connState, ReadHeaderTimeout: 10 * time.Second}
	a.chain.Store(&chain{http.NotFoundHandler()})
	return a
}

func (netHTTP) NewShedder() Handle[loadshedcore.Status] {
	s := loadshed.NewShedder()
	return handle[loadshedcore.Status]{Middleware{s.Handler()}, s.Status, s.Close}
}

func (netHTTP) NewThrottler(cfg throttlecore.Config[any, any]) Handle[throttlecore.Status] {
	th := throttle.NewThrottler(adapterConfig[throttle.Config](cfg))
	return handle[throttlecore.Status]{Middleware{th.Handler()}, th.Status, th.Close}
}

// NewRebalancer gives the adapter the app's *http.Server, which NewRebalancer hooks before the app serves: its
// ConnState then counts the connections ahead of the app's own count, and its Shutdown stops the loop.
func (netHTTP) NewRebalancer(app App, cfg rebalancecore.Config[any, any]) Handle[rebalancecore.Status] {
	c := adapterConfig[rebalance.Config](cfg)
	if app != nil {
		c.App = app.(*appNet).srv
	}
	r := rebalance.NewRebalancer(c)
	return handle[rebalancecore.Status]{Middleware{r.Handler()}, r.Status, r.Close}
}

// NewPicker's Handler is the Picker's middleware: every request it does not skip goes through the Picker's
// httputil.ReverseProxy to a picked upstream.
func (netHTTP) NewPicker(cfg upstreampickcore.Config[any, any]) Handle[upstreampickcore.Status] {
	p := upstreampick.NewPicker(adapterConfig[upstreampick.Config](cfg))
	return handle[upstreampickcore.Status]{Middleware{p.Handler()}, p.Status, p.Close}
}

// appNet is an http.Server whose handler is the app's middlewares and routes in the order they were added, as a
// Fiber app runs its stack: a route answers the requests it matches and passes on the others, a middleware wraps
// everything added after it. Requests no route matches get net/http's 404.
type appNet struct {
	srv *http.Server

	mu      sync.Mutex // serializes Use and Get
	entries []entry
	chain   atomic.Pointer[chain] // built from entries on every Use and Get

	// open counts the server's connections through ConnState: -1 until Serve, as Fiber's count reads before
	// its server starts.
	open atomic.Int64
}

type chain struct{ h http.Handler }

// entry is a middleware (mw set) or a route.
type entry struct {
	mw   func(http.Handler) http.Handler
	path string
	body func() string
}

func (a *appNet) Use(m Middleware) { a.add(entry{mw: m.handler.(func(http.Handler) http.Handler)}) }

func (a *appNet) Get(path string, body func() string) { a.add(entry{path: path, body: body}) }

func (a *appNet) add(e entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	h := http.NotFoundHandler()
	for i := len(a.entries) - 1; i >= 0; i-- {
		if e := a.entries[i]; e.mw != nil {
			h = e.mw(h)
		} else {
			h = route(e, h)
		}
	}
	a.chain.Store(&chain{h})
}

// route answers GET (and HEAD, as Fiber's Get does) of e.path with e.body's result and passes any other request
// to next.
func route(e entry, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != e.path || r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, e.body())
	})
}

func (a *appNet) serveHTTP(w http.ResponseWriter, r *http.Request) { a.chain.Load().h.ServeHTTP(w, r) }

// InMemory serves through the same handler as the server, with no connection: the request is built once and
// the response headers are cleared before each call, so that a call costs what the middlewares and route cost.
func (a *appNet) InMemory(path string) func() int {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	w := &statusWriter{header: http.Header{}}
	return func() int {
		clear(w.header)
		w.status = 0
		a.serveHTTP(w, req)
		if w.status == 0 {
			return http.StatusOK
		}
		return w.status
	}
}

// Serve reports a shutdown as the end of serving, not an error, as the Fiber apps' Listener does.
func (a *appNet) Serve(ln net.Listener) error {
	a.open.CompareAndSwap(-1, 0)
	if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown closes the listener and the idle connections at once and waits for the active ones to finish their
// requests; connections still busy after timeout are closed, so that the app has stopped when it returns.
func (a *appNet) Shutdown(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	if err != nil {
		_ = a.srv.Close()
	}
	return err
}

func (a *appNet) OpenConnections() int { return int(a.open.Load()) }

// connState counts a connection from StateNew until it closes or is hijacked, when net/http stops tracking it.
func (a *appNet) connState(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		a.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		a.open.Add(-1)
	}
}

// statusWriter is the in-memory ResponseWriter of InMemory: it keeps the status and discards the body.
type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}
