// Command gateway is the fiberguard demo: a Fiber app on 127.0.0.1 that wires every fiberguard module in, with
// routes to watch them work, Prometheus metrics on /metrics and a JSON /status of each module's state.
//
//	go run ./examples/gateway                 # listens on 127.0.0.1:8080
//	FIBERGUARD_ADDR=127.0.0.1:9000 go run ./examples/gateway
//	FIBERGUARD_ADDR=[::1]:9000 go run ./examples/gateway      # IPv6
//
// It logs its address once it listens; when it cannot listen it says why and exits with status 1.
//
// Each module's wiring lives in a file named after it; newGateway installs them in one visible order.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/fiberguard/fiberguard/examples/internal/demo"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// defaultAddr is where the gateway listens without FIBERGUARD_ADDR.
const defaultAddr = "127.0.0.1:8080"

// The server's limits. The gateway is copied into services, so it must not hold a connection for a client that
// trickles its request (one header line every few seconds) or that opened a keep-alive connection and went
// away: ReadTimeout bounds the reading of a whole request, headers included, and IdleTimeout the wait for the
// next request on a kept-alive connection. WriteTimeout bounds the writing of an answer (a /throttled answer
// may take its backend 10 s before that starts). ReadBufferSize is the largest request head (request line and
// headers) it accepts: fasthttp's 4 KB default answers a browser carrying a few large cookies with 431.
const (
	readTimeout    = 10 * time.Second
	writeTimeout   = 10 * time.Second
	idleTimeout    = 60 * time.Second
	readBufferSize = 16 << 10
)

// env is what a feature's setup may use.
type env struct {
	registry *prometheus.Registry
	// getenv reads the gateway's configuration (os.Getenv outside tests).
	getenv func(string) string
	// logf tells the user something at start (nil: the standard logger).
	logf func(format string, v ...any)
}

func (e env) printf(format string, v ...any) {
	if e.logf == nil {
		log.Printf(format, v...)
		return
	}
	e.logf(format, v...)
}

// setupFunc installs one module on app and returns its /status part and a function that stops it.
type setupFunc func(app *fiber.App, e env) (status func() any, stop func(), err error)

// feature is one module wired into the gateway.
type feature struct {
	name  string
	setup setupFunc
}

// features is the gateway's middleware chain, top to bottom: a request meets the global middleware in this
// order, then the routes the later features add.
func features() []feature {
	return []feature{
		{"loadshed", setupLoadshed},         // app.Use: sheds by the gateway's own CPU; adds GET /burn
		{"rebalance", setupRebalance},       // app.Use: hands keep-alive connections back (with a Prometheus)
		{"throttle", setupThrottle},         // GET /throttled: AIMD window over a demo backend
		{"upstreampick", setupUpstreampick}, // /proxy/*: proxy.Balancer to the nearest healthy upstream
	}
}

// gateway is a built app with its features' status and stop functions.
type gateway struct {
	app    *fiber.App
	status map[string]func() any
	stops  []func()
}

func newGateway(e env) (*gateway, error) {
	app := fiber.New(fiber.Config{
		DisableStartupMessage: true,
		AppName:               "fiberguard gateway",
		// Listen on whatever FIBERGUARD_ADDR names, IPv4 or IPv6 (Fiber's default is tcp4 only).
		Network:        fiber.NetworkTCP,
		ReadTimeout:    readTimeout,
		WriteTimeout:   writeTimeout,
		IdleTimeout:    idleTimeout,
		ReadBufferSize: readBufferSize,
	})
	g := &gateway{app: app, status: map[string]func() any{}}

	for _, f := range features() {
		st, stop, err := f.setup(app, e)
		if err != nil {
			g.close()
			return nil, featureError(f.name, err)
		}
		if st != nil {
			g.status[f.name] = st
		}
		if stop != nil {
			g.stops = append(g.stops, stop)
		}
	}

	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(e.registry, promhttp.HandlerOpts{})))
	app.Get("/status", func(c *fiber.Ctx) error {
		out := make(map[string]any, len(g.status))
		for name, st := range g.status {
			out[name] = st()
		}
		if !wantsPretty(c) {
			return c.JSON(out)
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(append(b, '\n'))
	})
	// The live page (GET /) charts what the sampler keeps of /status; g.close stops the sampler first.
	lv := newLive(g.status, liveInterval, liveCapacity)
	lv.mount(app)
	g.stops = append(g.stops, lv.start())
	return g, nil
}

// observing reports whether a request is for the gateway's own pages (the live page and its data, /status,
// /metrics): they must answer under any overload, so no module sheds, throttles or moves them.
func observing(c *fiber.Ctx) bool {
	switch p := c.Path(); p {
	case "/", "/status", "/metrics":
		return true
	default:
		return strings.HasPrefix(p, "/live/") || strings.HasPrefix(p, "/ui/")
	}
}

// demoRoute reports whether a request is for another module's demo route (/throttled, /proxy/...), which the
// global shedder leaves to that module so that each module's effect can be watched on its own.
func demoRoute(c *fiber.Ctx) bool {
	p := c.Path()
	return p == "/throttled" || strings.HasPrefix(p, "/proxy/")
}

func (g *gateway) close() {
	for i := len(g.stops) - 1; i >= 0; i-- {
		g.stops[i]()
	}
	g.stops = nil
}

// wantsPretty reports whether /status should be indented: asked with ?pretty (any value but 0 or false), or by
// a terminal tool (curl, Wget, HTTPie) that did not ask for JSON by name.
func wantsPretty(c *fiber.Ctx) bool {
	if c.Request().URI().QueryArgs().Has("pretty") {
		v := strings.ToLower(c.Query("pretty"))
		return v != "0" && v != "false"
	}
	if strings.Contains(c.Get(fiber.HeaderAccept), fiber.MIMEApplicationJSON) {
		return false
	}
	ua := c.Get(fiber.HeaderUserAgent)
	for _, tool := range []string{"curl/", "Wget/", "HTTPie/"} {
		if strings.HasPrefix(ua, tool) {
			return true
		}
	}
	return false
}

// featureError names the feature in a setup error, unless the error already starts with that name, as a
// module's invalid-config message does ("rebalance: Config.PrometheusURL must be ...").
func featureError(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

func main() { demo.Main(run) }

// run builds the gateway and serves it on FIBERGUARD_ADDR until ctx ends. It announces the address only once
// it listens, and returns the error when it cannot.
func run(ctx context.Context, getenv func(string) string, logger *log.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g, err := newGateway(env{registry: reg, getenv: getenv, logf: logger.Printf})
	if err != nil {
		return err
	}
	defer g.close()

	ln, err := demo.Listen(getenv, g.app.Config().Network, defaultAddr)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	logger.Printf("fiberguard gateway on http://%s (live page on /, JSON on /status, Prometheus on /metrics)", ln.Addr())

	served, shut := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(shut)
		select {
		case <-ctx.Done():
			_ = g.app.ShutdownWithTimeout(5 * time.Second)
			// A shutdown before Listener has handed ln to the server finds nothing to stop; closing ln makes
			// the server return as soon as it starts.
			_ = ln.Close()
		case <-served:
		}
	}()
	err = g.app.Listener(ln)
	close(served)
	<-shut
	return err
}
