package glue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	fiberv2 "github.com/gofiber/fiber/v2"
	fiberv3 "github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// version is one framework version: how to build its apps and reach its request context. A glue test body
// takes a version (and its module's adapter of that version) and runs once per version, see each.
type version[C any, H ~func(C) error] struct {
	name   string
	newApp func() app[C, H]
	// newFiberApp is newApp with the app's fasthttp handler and server, for the cases that test fasthttp
	// behaviour; nil for net/http.
	newFiberApp func() fiberApp[C, H]
	// The request context: c.Next(), c.Path(), a request header (c.Get), a response header (c.GetRespHeader),
	// an answer with a status and a text body, and the Content-Type that answer carries.
	next       func(c C) error
	path       func(c C) string
	header     func(c C, key string) string
	respHeader func(c C, key string) string
	send       func(c C, status int, body string) error
	sendType   string
	// fasthttp is the fasthttp request context under c; nil for net/http.
	fasthttp func(c C) *fasthttp.RequestCtx
}

// app is an app of one version.
type app[C any, H ~func(C) error] interface {
	Use(h H)
	Get(path string, h H)
	All(path string, h H)
	// Test serves req in memory with no timeout: a loaded machine is slow, not wrong.
	Test(req *http.Request) (*http.Response, error)
	// Call prepares a GET of path to be served in memory on the caller's goroutine; CallRequest one of req
	// (its method, URI, header and Close).
	Call(path string) call
	CallRequest(req *http.Request) call
	// Serve serves ln until Shutdown.
	Serve(ln net.Listener) error
	Shutdown() error
	// Instance is the app as a Config.App of the version takes it: the *fiber.App, or the *http.Server.
	Instance() any
}

// fiberApp is a Fiber app, with the fasthttp server under it.
type fiberApp[C any, H ~func(C) error] interface {
	app[C, H]
	Handler() fasthttp.RequestHandler
	Server() *fasthttp.Server
}

// call is one request served again and again in memory on the calling goroutine, so that a handler's panic
// reaches the caller; its request and response are reused, so what Do allocates is the app's.
type call interface {
	// Do serves the request afresh: the last response is cleared first.
	Do()
	Status() int
	// Header returns the response header key's first value and whether the response has it at all.
	Header(key string) (value string, present bool)
	Body() string
}

// each runs a body once per version, as subtests named fiber-v2, fiber-v3 and net-http.
func each[A2, A3, AN any](t *testing.T, a2 A2, a3 A3, an AN,
	body2 func(*testing.T, A2), body3 func(*testing.T, A3), bodyN func(*testing.T, AN)) {
	t.Helper()
	t.Run("fiber-v2", func(t *testing.T) { body2(t, a2) })
	t.Run("fiber-v3", func(t *testing.T) { body3(t, a3) })
	t.Run("net-http", func(t *testing.T) { bodyN(t, an) })
}

// both runs body once per Fiber version, as subtests named fiber-v2 and fiber-v3: for the cases that test
// fasthttp behaviour, which net/http does not have.
func both[A2, A3 any](t *testing.T, a2 A2, a3 A3, body2 func(*testing.T, A2), body3 func(*testing.T, A3)) {
	t.Helper()
	t.Run("fiber-v2", func(t *testing.T) { body2(t, a2) })
	t.Run("fiber-v3", func(t *testing.T) { body3(t, a3) })
}

// fasthttpCall is a call through a Fiber app's fasthttp handler.
type fasthttpCall struct {
	h   fasthttp.RequestHandler
	req fasthttp.Request // the request, copied into ctx before each call: a proxy rewrites it
	ctx *fasthttp.RequestCtx
}

func newFasthttpCall(h fasthttp.RequestHandler, req *http.Request) *fasthttpCall {
	f := &fasthttpCall{h: h, ctx: &fasthttp.RequestCtx{}}
	f.req.Header.SetMethod(req.Method)
	f.req.SetRequestURI(req.URL.RequestURI())
	f.req.Header.SetHost(req.Host)
	for key, values := range req.Header {
		for _, v := range values {
			f.req.Header.Add(key, v)
		}
	}
	if req.Close {
		f.req.Header.SetConnectionClose()
	}
	return f
}

// Do clears the last response keeping its body buffer (Response.Reset would give it back to a pool: an
// allocation here, not the app's).
func (f *fasthttpCall) Do() {
	f.req.CopyTo(&f.ctx.Request)
	f.ctx.Response.Header.Reset()
	f.ctx.Response.SetBodyString("")
	f.h(f.ctx)
}

func (f *fasthttpCall) Status() int { return f.ctx.Response.StatusCode() }
func (f *fasthttpCall) Body() string {
	return string(f.ctx.Response.Body())
}
func (f *fasthttpCall) Header(key string) (string, bool) {
	for k, v := range f.ctx.Response.Header.All() {
		if string(k) == key {
			return string(v), true
		}
	}
	return "", false
}

// getRequest is a GET of path, as a server hands it to its handler.
func getRequest(path string) *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) }

// requestCtx is a reusable request context for GET path, to drive an app's handler without a connection.
func requestCtx(path string) *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI(path)
	return ctx
}

// quiet lets a test's server end without leftover goroutines: fasthttp's Date refresher would outlive the test
// (goleak), and its idle-worker cleaner exits this long after the server stops.
func quiet(s *fasthttp.Server) {
	s.NoDefaultDate = true
	s.MaxIdleWorkerDuration = 100 * time.Millisecond
}

var v2 = version[*fiberv2.Ctx, fiberv2.Handler]{
	name:        "fiber-v2",
	newApp:      func() app[*fiberv2.Ctx, fiberv2.Handler] { return newAppV2() },
	newFiberApp: func() fiberApp[*fiberv2.Ctx, fiberv2.Handler] { return newAppV2() },
	next:        func(c *fiberv2.Ctx) error { return c.Next() },
	path:        func(c *fiberv2.Ctx) string { return c.Path() },
	header:      func(c *fiberv2.Ctx, key string) string { return c.Get(key) },
	respHeader:  func(c *fiberv2.Ctx, key string) string { return c.GetRespHeader(key) },
	send: func(c *fiberv2.Ctx, status int, body string) error {
		return c.Status(status).SendString(body)
	},
	sendType: fiberv2.MIMETextPlainCharsetUTF8,
	fasthttp: func(c *fiberv2.Ctx) *fasthttp.RequestCtx { return c.Context() },
}

// appV2 is a Fiber v2 app; handler is its Handler, built once, by the first call (building it again while it
// serves would race with the requests).
type appV2 struct {
	*fiberv2.App
	handler func() fasthttp.RequestHandler
}

func newAppV2() appV2 { return asAppV2(fiberv2.New(fiberv2.Config{DisableStartupMessage: true})) }

// asAppV2 is a as an app, quieted.
func asAppV2(a *fiberv2.App) appV2 {
	quiet(a.Server())
	return appV2{a, sync.OnceValue(a.Handler)}
}

func (a appV2) Use(h fiberv2.Handler)                          { a.App.Use(h) }
func (a appV2) Get(path string, h fiberv2.Handler)             { a.App.Get(path, h) }
func (a appV2) All(path string, h fiberv2.Handler)             { a.App.All(path, h) }
func (a appV2) Test(req *http.Request) (*http.Response, error) { return a.App.Test(req, -1) }
func (a appV2) Serve(ln net.Listener) error                    { return a.Listener(ln) }
func (a appV2) Instance() any                                  { return a.App }
func (a appV2) Call(path string) call                          { return a.CallRequest(getRequest(path)) }
func (a appV2) CallRequest(req *http.Request) call             { return newFasthttpCall(a.handler(), req) }

var v3 = version[fiberv3.Ctx, fiberv3.Handler]{
	name:        "fiber-v3",
	newApp:      func() app[fiberv3.Ctx, fiberv3.Handler] { return newAppV3() },
	newFiberApp: func() fiberApp[fiberv3.Ctx, fiberv3.Handler] { return newAppV3() },
	next:        func(c fiberv3.Ctx) error { return c.Next() },
	path:        func(c fiberv3.Ctx) string { return c.Path() },
	header:      func(c fiberv3.Ctx, key string) string { return c.Get(key) },
	respHeader:  func(c fiberv3.Ctx, key string) string { return c.GetRespHeader(key) },
	send: func(c fiberv3.Ctx, status int, body string) error {
		return c.Status(status).SendString(body)
	},
	sendType: fiberv3.MIMETextPlainCharsetUTF8,
	fasthttp: func(c fiberv3.Ctx) *fasthttp.RequestCtx { return c.RequestCtx() },
}

// appV3 is a Fiber v3 app; handler is its Handler, built once, as appV2's.
type appV3 struct {
	*fiberv3.App
	handler func() fasthttp.RequestHandler
}

func newAppV3() appV3 { return asAppV3(fiberv3.New()) }

// asAppV3 is a as an app, quieted.
func asAppV3(a *fiberv3.App) appV3 {
	quiet(a.Server())
	return appV3{a, sync.OnceValue(a.Handler)}
}

func (a appV3) Use(h fiberv3.Handler)              { a.App.Use(h) }
func (a appV3) Get(path string, h fiberv3.Handler) { a.App.Get(path, h) }
func (a appV3) All(path string, h fiberv3.Handler) { a.App.All(path, h) }
func (a appV3) Test(req *http.Request) (*http.Response, error) {
	return a.App.Test(req, fiberv3.TestConfig{Timeout: 0})
}
func (a appV3) Serve(ln net.Listener) error {
	return a.Listener(ln, fiberv3.ListenConfig{DisableStartupMessage: true})
}
func (a appV3) Instance() any                      { return a.App }
func (a appV3) Call(path string) call              { return a.CallRequest(getRequest(path)) }
func (a appV3) CallRequest(req *http.Request) call { return newFasthttpCall(a.handler(), req) }

// The context and handler types of each version, for the adapters' type arguments.
type (
	fiberv2Ctx     = fiberv2.Ctx
	fiberv2Handler = fiberv2.Handler
	fiberv3Ctx     = fiberv3.Ctx
	fiberv3Handler = fiberv3.Handler
)

// netHTTP is the standard library's net/http as a version: its request context is an httpCtx, its handler an
// httpHandler, its app a chain of them served by an http.Server. A net/http adapter's middleware joins the
// chain through middleware, and its Config is the body's converted by convertConfig.
var netHTTP = version[*httpCtx, httpHandler]{
	name:       "net-http",
	newApp:     func() app[*httpCtx, httpHandler] { return newHTTPApp() },
	next:       func(c *httpCtx) error { return c.Next() },
	path:       func(c *httpCtx) string { return c.r.URL.Path },
	header:     func(c *httpCtx, key string) string { return c.r.Header.Get(key) },
	respHeader: func(c *httpCtx, key string) string { return c.Header().Get(key) },
	send: func(c *httpCtx, status int, body string) error {
		c.WriteHeader(status)
		_, err := c.WriteString(body)
		return err
	},
	sendType: "", // a net/http handler that sets none sends none through a recorder
}

// httpHandler is a handler of the net/http version's chain.
type httpHandler = func(*httpCtx) error

// httpCtx is a request in the net/http version's chain: the request, the response writer and the position in
// the app's handlers. It is the http.ResponseWriter a middleware in the chain is given, so that the handler
// after the middleware finds it again.
type httpCtx struct {
	app  *httpApp
	w    http.ResponseWriter
	r    *http.Request
	pos  int   // the next handler of app.routes to try
	err  error // what the chain after a middleware returned
	sent bool  // the response's header is written
}

// errNotFound is what Next returns past the last handler, as Fiber's does; the app answers it with 404.
var errNotFound = errors.New("no handler matched")

// Next runs the next handler whose route matches the request.
func (c *httpCtx) Next() error {
	for c.pos < len(c.app.routes) {
		rt := c.app.routes[c.pos]
		c.pos++
		if rt.matches(c.r) {
			return rt.h(c)
		}
	}
	return errNotFound
}

// Set sets a response header.
func (c *httpCtx) Set(key, value string) { c.w.Header().Set(key, value) }

func (c *httpCtx) Header() http.Header { return c.w.Header() }

func (c *httpCtx) WriteHeader(status int) {
	c.sent = true
	c.w.WriteHeader(status)
}

func (c *httpCtx) Write(b []byte) (int, error) {
	c.sent = true
	return c.w.Write(b)
}

func (c *httpCtx) WriteString(s string) (int, error) {
	c.sent = true
	return io.WriteString(c.w, s)
}

// middleware is a net/http middleware as a handler of the chain: what it passes on runs the rest of the chain,
// with the request it passed (a middleware may replace it).
func middleware(mw func(http.Handler) http.Handler) httpHandler {
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := w.(*httpCtx)
		if !ok {
			panic(fmt.Sprintf("glue: a net/http middleware passed on a %T, not the chain's writer", w))
		}
		c.r = r
		c.err = c.Next()
	}))
	return func(c *httpCtx) error {
		r := c.r
		c.err = nil
		h.ServeHTTP(c, r)
		err := c.err
		c.r, c.err = r, nil
		return err
	}
}

// route is a handler of an httpApp and the requests it takes: every one (use), or one method's (or any
// method's, "") on a path, or under a path ending in "*".
type route struct {
	use    bool
	method string
	path   string
	h      httpHandler
}

func (rt route) matches(r *http.Request) bool {
	if rt.use {
		return true
	}
	if rt.method != "" && rt.method != r.Method {
		return false
	}
	if prefix, ok := strings.CutSuffix(rt.path, "*"); ok {
		return strings.HasPrefix(r.URL.Path, prefix)
	}
	return r.URL.Path == rt.path
}

// httpApp is the net/http version's app: its handlers in the order they were added, run as Fiber runs a
// chain. A handler's error is answered with 500 and its text, a request no handler takes with 404, unless the
// response was written already.
type httpApp struct {
	routes []route
	srv    *http.Server
	ctxs   sync.Pool
}

func newHTTPApp() *httpApp {
	a := &httpApp{}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	a.ctxs.New = func() any { return new(httpCtx) }
	return a
}

func (a *httpApp) Use(h httpHandler) { a.routes = append(a.routes, route{use: true, h: h}) }
func (a *httpApp) Get(path string, h httpHandler) {
	a.routes = append(a.routes, route{method: "GET", path: path, h: h})
}
func (a *httpApp) All(path string, h httpHandler) {
	a.routes = append(a.routes, route{path: path, h: h})
}
func (a *httpApp) Instance() any { return a.srv }

// ServeHTTP runs the chain. Its contexts are pooled, as Fiber's are, so that the chain allocates nothing.
func (a *httpApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := a.ctxs.Get().(*httpCtx)
	*c = httpCtx{app: a, w: w, r: r}
	err := c.Next()
	switch {
	case err == nil || c.sent:
	case errors.Is(err, errNotFound):
		http.Error(c, "Cannot "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	default:
		http.Error(c, err.Error(), http.StatusInternalServerError)
	}
	*c = httpCtx{}
	a.ctxs.Put(c)
}

func (a *httpApp) Test(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func (a *httpApp) Call(path string) call { return a.CallRequest(getRequest(path)) }

func (a *httpApp) CallRequest(req *http.Request) call {
	return &httpCall{h: a, req: req, rec: &recorder{header: http.Header{}}}
}

// Serve serves ln until Shutdown; it returns nil then, as Fiber's Listener does.
func (a *httpApp) Serve(ln net.Listener) error {
	if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (a *httpApp) Shutdown() error { return a.srv.Shutdown(context.Background()) }

// httpCall is a call through an http.Handler, into a recorder reused from one Do to the next.
type httpCall struct {
	h   http.Handler
	req *http.Request
	rec *recorder
}

func (h *httpCall) Do()          { h.rec.reset(); h.h.ServeHTTP(h.rec, h.req) }
func (h *httpCall) Status() int  { return h.rec.status }
func (h *httpCall) Body() string { return h.rec.body.String() }
func (h *httpCall) Header(key string) (string, bool) {
	v, ok := h.rec.header[key]
	if len(v) == 0 {
		return "", ok
	}
	return v[0], true
}

// recorder is a ResponseWriter that can be cleared for the next response, keeping its map and buffer: unlike
// httptest.ResponseRecorder, it records every response's status, not only the first one's.
type recorder struct {
	header http.Header
	status int // 0 until the header is written
	body   bytes.Buffer
}

func (r *recorder) reset() {
	clear(r.header)
	r.status = 0
	r.body.Reset()
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

func (r *recorder) WriteString(s string) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.WriteString(s)
}

// convertConfig converts a core Config between a body's types and a net/http adapter's (either way): a field of
// the same type is copied; a func(*httpCtx) bool becomes a func(*http.Request) bool, an httpHandler an
// http.Handler, and back. A field it cannot convert panics, naming it: a new field is never dropped.
func convertConfig[D, S any](src S) D {
	var dst D
	sv, dv := reflect.ValueOf(&src).Elem(), reflect.ValueOf(&dst).Elem()
	for i := range sv.NumField() {
		name := sv.Type().Field(i).Name
		sf, df := sv.Field(i), dv.FieldByName(name)
		if !df.IsValid() {
			panic(fmt.Sprintf("glue: Config.%s: %v has no such field", name, dv.Type()))
		}
		if !sv.Type().Field(i).IsExported() { // set by the core itself (WithDefaults): copied as it is
			if sf.Type() != df.Type() {
				panic(fmt.Sprintf("glue: Config.%s: no conversion from %v to %v", name, sf.Type(), df.Type()))
			}
			reflect.NewAt(df.Type(), unsafe.Pointer(df.UnsafeAddr())).Elem().Set(
				reflect.NewAt(sf.Type(), unsafe.Pointer(sf.UnsafeAddr())).Elem())
			continue
		}
		if sf.Type() == df.Type() {
			df.Set(sf)
			continue
		}
		conv, ok := conversions[[2]reflect.Type{sf.Type(), df.Type()}]
		if !ok {
			panic(fmt.Sprintf("glue: Config.%s: no conversion from %v to %v", name, sf.Type(), df.Type()))
		}
		if !sf.IsNil() {
			df.Set(reflect.ValueOf(conv(sf.Interface())))
		}
	}
	return dst
}

// conversions holds convertConfig's conversions of a field, by its source and destination types.
var conversions = map[[2]reflect.Type]func(any) any{
	{reflect.TypeFor[func(*httpCtx) bool](), reflect.TypeFor[func(*http.Request) bool]()}: func(f any) any {
		return func(r *http.Request) bool { return f.(func(*httpCtx) bool)(&httpCtx{r: r}) }
	},
	{reflect.TypeFor[func(*http.Request) bool](), reflect.TypeFor[func(*httpCtx) bool]()}: func(f any) any {
		return func(c *httpCtx) bool { return f.(func(*http.Request) bool)(c.r) }
	},
	{reflect.TypeFor[httpHandler](), reflect.TypeFor[http.Handler]()}: func(f any) any {
		h := f.(httpHandler)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, ok := w.(*httpCtx)
			if !ok { // not through the chain: the handler's own context
				c = &httpCtx{w: w, r: r}
			}
			if err := h(c); err != nil && !c.sent {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		})
	},
	{reflect.TypeFor[http.Handler](), reflect.TypeFor[httpHandler]()}: func(f any) any {
		h := f.(http.Handler)
		return func(c *httpCtx) error { h.ServeHTTP(c, c.r); return nil }
	},
}

// convertConfigs converts the config argument of a constructor, see convertConfig.
func convertConfigs[D, S any](config []S) []D {
	out := make([]D, len(config))
	for i, c := range config {
		out[i] = convertConfig[D](c)
	}
	return out
}

// defaults is an adapter's ConfigDefault as a body sees it: get reads it; edit changes it until the test ends.
type defaults[T any] struct {
	get  func() T
	edit func(t *testing.T, change func(*T))
}

// fiberDefaults is the ConfigDefault of a Fiber adapter, whose type is the body's.
func fiberDefaults[T any](p *T) defaults[T] {
	return defaults[T]{
		get: func() T { return *p },
		edit: func(t *testing.T, change func(*T)) {
			saved := *p
			t.Cleanup(func() { *p = saved })
			change(p)
		},
	}
}

// httpDefaults is the ConfigDefault of a net/http adapter, converted from and to the body's type.
func httpDefaults[T, N any](p *N) defaults[T] {
	return defaults[T]{
		get: func() T { return convertConfig[T](*p) },
		edit: func(t *testing.T, change func(*T)) {
			saved := *p
			t.Cleanup(func() { *p = saved })
			c := convertConfig[T](*p)
			change(&c)
			*p = convertConfig[N](c)
		},
	}
}
