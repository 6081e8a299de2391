package glue

import (
	"net"
	"net/http"
	"testing"
	"time"

	fiberv2 "github.com/gofiber/fiber/v2"
	fiberv3 "github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// version is one Fiber major version: how to build its apps and reach its request context. A glue test body
// takes a version (and its module's adapter of that version) and runs once per version, see both.
type version[C any, H ~func(C) error] struct {
	name   string
	newApp func() app[C, H]
	// The request context: c.Next(), c.Path(), a request header (c.Get), a response header (c.GetRespHeader),
	// an answer with a status and a text body, and the fasthttp request context under it.
	next       func(c C) error
	path       func(c C) string
	header     func(c C, key string) string
	respHeader func(c C, key string) string
	send       func(c C, status int, body string) error
	fasthttp   func(c C) *fasthttp.RequestCtx
}

// app is a Fiber app of one version.
type app[C any, H ~func(C) error] interface {
	Use(h H)
	Get(path string, h H)
	All(path string, h H)
	// Test serves req in memory with no timeout: a loaded machine is slow, not wrong.
	Test(req *http.Request) (*http.Response, error)
	Handler() fasthttp.RequestHandler
	Server() *fasthttp.Server
	// Serve serves ln until Shutdown.
	Serve(ln net.Listener) error
	Shutdown() error
	// Fiber is the *fiber.App of the version, for a Config field of that type.
	Fiber() any
}

// both runs body once per Fiber version, as subtests named fiber-v2 and fiber-v3.
func both[A2, A3 any](t *testing.T, a2 A2, a3 A3, body2 func(*testing.T, A2), body3 func(*testing.T, A3)) {
	t.Helper()
	t.Run("fiber-v2", func(t *testing.T) { body2(t, a2) })
	t.Run("fiber-v3", func(t *testing.T) { body3(t, a3) })
}

// quiet lets a test's server end without leftover goroutines: fasthttp's Date refresher would outlive the test
// (goleak), and its idle-worker cleaner exits this long after the server stops.
func quiet(s *fasthttp.Server) {
	s.NoDefaultDate = true
	s.MaxIdleWorkerDuration = 100 * time.Millisecond
}

var v2 = version[*fiberv2.Ctx, fiberv2.Handler]{
	name: "fiber-v2",
	newApp: func() app[*fiberv2.Ctx, fiberv2.Handler] {
		a := fiberv2.New(fiberv2.Config{DisableStartupMessage: true})
		quiet(a.Server())
		return appV2{a}
	},
	next:       func(c *fiberv2.Ctx) error { return c.Next() },
	path:       func(c *fiberv2.Ctx) string { return c.Path() },
	header:     func(c *fiberv2.Ctx, key string) string { return c.Get(key) },
	respHeader: func(c *fiberv2.Ctx, key string) string { return c.GetRespHeader(key) },
	send: func(c *fiberv2.Ctx, status int, body string) error {
		return c.Status(status).SendString(body)
	},
	fasthttp: func(c *fiberv2.Ctx) *fasthttp.RequestCtx { return c.Context() },
}

type appV2 struct{ *fiberv2.App }

func (a appV2) Use(h fiberv2.Handler)                          { a.App.Use(h) }
func (a appV2) Get(path string, h fiberv2.Handler)             { a.App.Get(path, h) }
func (a appV2) All(path string, h fiberv2.Handler)             { a.App.All(path, h) }
func (a appV2) Test(req *http.Request) (*http.Response, error) { return a.App.Test(req, -1) }
func (a appV2) Serve(ln net.Listener) error                    { return a.Listener(ln) }
func (a appV2) Fiber() any                                     { return a.App }

var v3 = version[fiberv3.Ctx, fiberv3.Handler]{
	name: "fiber-v3",
	newApp: func() app[fiberv3.Ctx, fiberv3.Handler] {
		a := fiberv3.New()
		quiet(a.Server())
		return appV3{a}
	},
	next:       func(c fiberv3.Ctx) error { return c.Next() },
	path:       func(c fiberv3.Ctx) string { return c.Path() },
	header:     func(c fiberv3.Ctx, key string) string { return c.Get(key) },
	respHeader: func(c fiberv3.Ctx, key string) string { return c.GetRespHeader(key) },
	send: func(c fiberv3.Ctx, status int, body string) error {
		return c.Status(status).SendString(body)
	},
	fasthttp: func(c fiberv3.Ctx) *fasthttp.RequestCtx { return c.RequestCtx() },
}

type appV3 struct{ *fiberv3.App }

func (a appV3) Use(h fiberv3.Handler)              { a.App.Use(h) }
func (a appV3) Get(path string, h fiberv3.Handler) { a.App.Get(path, h) }
func (a appV3) All(path string, h fiberv3.Handler) { a.App.All(path, h) }
func (a appV3) Test(req *http.Request) (*http.Response, error) {
	return a.App.Test(req, fiberv3.TestConfig{Timeout: 0})
}
func (a appV3) Serve(ln net.Listener) error {
	return a.Listener(ln, fiberv3.ListenConfig{DisableStartupMessage: true})
}
func (a appV3) Fiber() any { return a.App }

// The context and handler types of each version, for the adapters' type arguments.
type (
	fiberv2Ctx     = fiberv2.Ctx
	fiberv2Handler = fiberv2.Handler
	fiberv3Ctx     = fiberv3.Ctx
	fiberv3Handler = fiberv3.Handler
)
