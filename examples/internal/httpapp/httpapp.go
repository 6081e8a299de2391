// Package httpapp wires every fiberguard module for net/http, once, for the example apps that mount it on a
// router of their own (the standard library's ServeMux, chi): the global middlewares, the routes' handlers, the
// status page and the metrics, and what stops them.
package httpapp

import (
	"errors"
	"log"

	"github.com/fiberguard/fiberguard/examples/internal/demo"

	"context"
	"crypto/sha256"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fiberguard/fiberguard/nethttp/loadshed"
	"github.com/fiberguard/fiberguard/nethttp/rebalance"
	"github.com/fiberguard/fiberguard/nethttp/throttle"
	"github.com/fiberguard/fiberguard/nethttp/upstreampick"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// App is the modules of one example app.
type App struct {
	// Global is the middleware in front of every route: loadshed, and rebalance when a Prometheus scrapes every
	// node (FIBERGUARD_PROMETHEUS_URL).
	Global func(http.Handler) http.Handler
	// Work serves GET /work?ms=N&wait=M: N ms of CPU (default 5), then M ms of waiting as on a backend (default
	// 0), behind a throttle whose in-process trigger fires while more than 4 requests are in it.
	Work http.Handler
	// Proxy serves ANY /proxy/...: upstreampick's reverse proxy over two in-process upstreams, the nearest healthy
	// one by health-check round trip.
	Proxy http.Handler
	// Status serves every module's Status as JSON; Metrics the Prometheus metrics.
	Status, Metrics http.Handler
	// ConnState counts the server's connections for rebalance: the server's ConnState hook.
	ConnState func(net.Conn, http.ConnState)

	stops []func()
}

// observing is for the app's own pages, which no module sheds or moves.
func observing(r *http.Request) bool { return r.URL.Path == "/status" || r.URL.Path == "/metrics" }

// New builds the modules; Close stops them.
func New(getenv func(string) string) (*App, error) {
	a := &App{ConnState: func(net.Conn, http.ConnState) {}}
	reg := prometheus.NewRegistry()
	status := map[string]func() any{}

	shed := loadshed.NewShedder(loadshed.Config{Next: observing, Registerer: reg})
	a.stops = append(a.stops, func() { _ = shed.Close() })
	status["loadshed"] = func() any { return shed.Status() }
	a.Global = shed.Handler()

	if url := getenv("FIBERGUARD_PROMETHEUS_URL"); url != "" {
		rb := rebalance.NewRebalancer(rebalance.Config{Next: observing, PrometheusURL: url, Registerer: reg})
		a.stops = append(a.stops, func() { _ = rb.Close() })
		status["rebalance"] = func() any { return rb.Status() }
		a.ConnState = rb.ConnState
		outer, inner := a.Global, rb.Handler()
		a.Global = func(next http.Handler) http.Handler { return outer(inner(next)) }
	}

	var inWork atomic.Int64
	th := throttle.NewThrottler(throttle.Config{Triggers: demo.WorkTrigger(&inWork), WindowMin: 2, WindowMax: 64, Registerer: reg})
	a.stops = append(a.stops, func() { _ = th.Close() })
	status["throttle"] = func() any { return th.Status() }
	a.Work = th.Handler()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms, okMS := param(r, "ms", 5)
		wait, okWait := param(r, "wait", 0)
		if !okMS || !okWait {
			http.Error(w, "ms and wait must be integers in [0, 1000]", http.StatusBadRequest)
			return
		}
		inWork.Add(1)
		defer inWork.Add(-1)
		burn(time.Duration(ms) * time.Millisecond)
		time.Sleep(time.Duration(wait) * time.Millisecond)
		_, _ = w.Write([]byte("worked " + strconv.Itoa(ms) + "ms\n"))
	}))

	var servers []string
	for _, name := range []string{"site-a", "site-b"} {
		addr, stop, err := demo.Upstream(name, "/proxy")
		if err != nil {
			a.Close()
			return nil, err
		}
		a.stops = append(a.stops, stop)
		servers = append(servers, "http://"+addr)
	}
	picker := upstreampick.NewPicker(upstreampick.Config{Servers: servers, Registerer: reg})
	a.stops = append(a.stops, func() { _ = picker.Close() })
	status["upstreampick"] = func() any { return picker.Status() }
	a.Proxy = picker

	a.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	a.Status = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		out := make(map[string]any, len(status))
		for name, st := range status {
			out[name] = st()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return a, nil
}

// param is the query parameter name of r as an integer in [0, 1000], def when absent.
func param(r *http.Request, name string, def int) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && n <= 1000
}

// Close stops every module, the last started first.
func (a *App) Close() {
	for i := len(a.stops) - 1; i >= 0; i-- {
		a.stops[i]()
	}
	a.stops = nil
}

// burn hashes for about d of wall time: the examples' stand-in for CPU-bound work.
func burn(d time.Duration) {
	var sum [sha256.Size]byte
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 64 {
			sum = sha256.Sum256(sum[:])
		}
	}
}

// Run is the main of a net/http example app: it builds the modules, mounts them with route and serves them on
// FIBERGUARD_ADDR (def when unset) until ctx ends.
func Run(what, def string, route func(*App) http.Handler) func(context.Context, func(string) string, *log.Logger) error {
	return func(ctx context.Context, getenv func(string) string, logger *log.Logger) error {
		a, err := New(getenv)
		if err != nil {
			return err
		}
		defer a.Close()
		srv := &http.Server{Handler: route(a), ConnState: a.ConnState, ReadHeaderTimeout: 5 * time.Second}
		return demo.Serve(ctx, getenv, logger, what, "GET /work, ANY /proxy/, GET /status, /metrics", def,
			func(ln net.Listener) error {
				if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return nil
			},
			func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			})
	}
}
