// Package fiberapp runs fiberguard's middlewares in real apps of each framework fiberguard adapts to, so that one
// end-to-end test body covers every adapter of a module: V2 builds its apps with github.com/gofiber/fiber/v2 and
// the adapters github.com/fiberguard/fiberguard/<name>, V3 with github.com/gofiber/fiber/v3 and
// github.com/fiberguard/fiberguard/v3/<name>, NetHTTP with the standard library's http.Server and
// github.com/fiberguard/fiberguard/nethttp/<name>.
//
// A test describes a middleware with its module's core Config (the settings that carry no framework type, which
// every adapter's Config has under the same names and types) and reads it through the core's Status, which every
// adapter returns.
package fiberapp

import (
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/valyala/fasthttp"
)

// Version builds the apps and middlewares of one framework: a Fiber major version, or net/http.
type Version interface {
	// Name is "fiber-v2", "fiber-v3" or "net-http": the name of the subtest that runs on this version.
	Name() string
	// NewApp returns an app with no route yet.
	NewApp() App
	// NewShedder is loadshed.NewShedder() with no Config: the Shedder behind loadshed.New(), with the defaults.
	NewShedder() Handle[loadshedcore.Status]
	// NewThrottler is throttle.NewThrottler with cfg's settings.
	NewThrottler(cfg throttlecore.Config[any, any]) Handle[throttlecore.Status]
	// NewRebalancer is rebalance.NewRebalancer with cfg's settings and, unless app is nil, Config.App set to app.
	NewRebalancer(app App, cfg rebalancecore.Config[any, any]) Handle[rebalancecore.Status]
	// NewPicker is upstreampick.NewPicker with cfg's settings. Its Handler is the proxy middleware a gateway puts
	// in front of the upstreams: on Fiber, proxy.Balancer of that version over the Picker's LBClient; on
	// net/http, the Picker's own Handler, an httputil.ReverseProxy.
	NewPicker(cfg upstreampickcore.Config[any, any]) Handle[upstreampickcore.Status]
}

// App is an app of one Version: its middlewares and routes run in the order they were added.
type App interface {
	// Use adds a middleware of this app's version; one of another version panics.
	Use(m Middleware)
	// Get routes GET path to a handler answering 200 with body's result.
	Get(path string, body func() string)
	// InMemory returns a function that sends GET path through the app's handler, as its server calls it, with no
	// listener or connection, and returns the response's status. The function reuses its request and response:
	// give each goroutine its own.
	InMemory(path string) func() int
	// Serve serves ln until Shutdown.
	Serve(ln net.Listener) error
	// Shutdown stops serving: the listener closes at once, open connections once their requests are answered.
	Shutdown(timeout time.Duration) error
	// OpenConnections is the server's count of open connections (-1 before it serves).
	OpenConnections() int
}

// Middleware is a middleware of one version, for App.Use: a fiber.Handler of a Fiber version, a
// func(http.Handler) http.Handler on net/http.
type Middleware struct{ handler any }

// Handle is a module's handle (Shedder, Throttler, Rebalancer, Picker) of one version.
type Handle[S any] interface {
	Handler() Middleware
	Status() S
	Close() error
}

var (
	// V2 is Fiber v2 with fiberguard's v2 adapters.
	V2 Version = v2{}
	// V3 is Fiber v3 with fiberguard's v3 adapters.
	V3 Version = v3{}
	// NetHTTP is the standard library's http.Server with fiberguard's net/http adapters.
	NetHTTP Version = netHTTP{}
	// Versions are the versions every end-to-end test runs on.
	Versions = []Version{V2, V3, NetHTTP}
)

// Each runs body once per version, as subtests named after the versions.
func Each(t *testing.T, body func(t *testing.T, fv Version)) {
	t.Helper()
	for _, fv := range Versions {
		t.Run(fv.Name(), func(t *testing.T) { body(t, fv) })
	}
}

// ByName returns the version named name.
func ByName(name string) (Version, bool) {
	for _, fv := range Versions {
		if fv.Name() == name {
			return fv, true
		}
	}
	return nil, false
}

// handle is a Handle over an adapter's handle.
type handle[S any] struct {
	mw     Middleware
	status func() S
	close  func() error
}

func (h handle[S]) Handler() Middleware { return h.mw }
func (h handle[S]) Status() S           { return h.status() }
func (h handle[S]) Close() error        { return h.close() }

// adapterConfig returns an adapter's Config (C) holding every setting of src, a core Config: each field set in src
// goes to the field of the same name. A set field that C lacks, or has with another type, panics, so that no
// setting is dropped on the way to either adapter.
func adapterConfig[C any](src any) C {
	var dst C
	d, s := reflect.ValueOf(&dst).Elem(), reflect.ValueOf(src)
	for i := range s.NumField() {
		f, v := s.Type().Field(i), s.Field(i)
		if v.IsZero() {
			continue
		}
		to := d.FieldByName(f.Name)
		if !to.IsValid() || to.Type() != f.Type {
			panic(fmt.Sprintf("fiberapp: %v has no field %s of type %v", d.Type(), f.Name, f.Type))
		}
		to.Set(v)
	}
	return dst
}

// inMemory serves GET path through a Fiber app's handler h on one reused RequestCtx, resetting its response
// before each call.
func inMemory(h fasthttp.RequestHandler, path string) func() int {
	rc := &fasthttp.RequestCtx{}
	rc.Request.SetRequestURI(path)
	return func() int {
		rc.Response.Reset()
		h(rc)
		return rc.Response.StatusCode()
	}
}

// quiet lets a test's server end without leftover goroutines: fasthttp's Date refresher would outlive the test
// (goleak), and its idle-worker cleaner exits this long after the server stops.
func quiet(s *fasthttp.Server) {
	s.NoDefaultDate = true
	s.MaxIdleWorkerDuration = 100 * time.Millisecond
}
