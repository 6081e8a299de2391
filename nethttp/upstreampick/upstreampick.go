// Package upstreampick sends each proxied request to one of the nearest healthy upstreams, as net/http
// middleware over httputil.ReverseProxy.
//
// A health goroutine dials every upstream once per interval and keeps an exponentially weighted average of its
// TCP connect time. Upstreams are grouped into latency tiers; a request goes to an upstream picked at random
// among the healthy ones of the nearest tier, so traffic stays in the nearest site and spreads evenly inside it.
// An upstream that fails to connect twice in a row (health dial or proxied request) gets no traffic until a
// connection to it succeeds again. When no upstream can take a request, the Picker rejects it through
// Config.OnReject.
//
// This package is the net/http adapter over github.com/fiberguard/fiberguard/upstreampick/core, which holds
// everything that needs no HTTP stack; github.com/fiberguard/fiberguard/upstreampick (Fiber v2) and
// github.com/fiberguard/fiberguard/v3/upstreampick (Fiber v3) are the same for Fiber, with the same Config,
// behaviour and metrics. It compiles no Fiber and no fasthttp package.
package upstreampick

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"syscall"

	"github.com/fiberguard/fiberguard/upstreampick/core"
)

// Config defines the config for the middleware: the core's Config (core.Config, where each field is documented
// in full) with this framework's types. A zero field takes its default, from ConfigDefault; an invalid one
// makes New panic, naming the field. The fields and their defaults:
//
//   - Next func(c *http.Request) bool: nil
//   - Servers []string: none: required, unless Discover names at least one name.
//   - Discover []Discovery: nil (Servers only)
//   - Mode Mode: ModeLatency
//   - HealthInterval time.Duration: 1 * time.Second
//   - HealthTimeout time.Duration: HealthInterval / 2
//   - DrainTimeout time.Duration: 30 * time.Second
//   - Timeout time.Duration: 1 * time.Second
//   - Retries int: 2
//   - ConfigureClient any: nil
//   - Resolver Resolver: nil (net.DefaultResolver)
//   - LookupHost func(ctx context.Context, host string) (addrs []string, err error): nil
//     (net.DefaultResolver.LookupHost)
//   - Dial func(ctx context.Context, addr string) (net.Conn, error): nil (a net.Dialer over TCP)
//   - OnReject http.Handler: 503 with the body "upstreampick: no upstream available\n" (the adapter's ConfigDefault)
//   - RetryAfter time.Duration: time.Second
//   - Name string: "default"
//   - Registerer prometheus.Registerer: nil (prometheus.DefaultRegisterer)
//   - DisableMetrics bool: false
//   - Context context.Context: nil (runs until Close)
type Config = core.Config[*http.Request, http.Handler]

// rejectBody is the default rejection's body, the Fiber adapters' text.
var rejectBody = []byte("upstreampick: no upstream available\n")

// textPlain is the default rejection's Content-Type, assigned as is (cap == len: an append by later code copies
// it rather than writing into the shared array).
var textPlain = []string{"text/plain; charset=utf-8"}

// ConfigDefault is the default config. Servers and Discover have no default.
var ConfigDefault = core.Defaults[*http.Request, http.Handler](http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header()["Content-Type"] = textPlain
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(rejectBody)
}))

// ErrNoUpstream is what Transport returns when no upstream can take a request (every one is unhealthy or
// draining); ErrorHandler answers it through Reject.
var ErrNoUpstream = errors.New("upstreampick: no upstream available")

// Picker chooses an upstream for each request, proxies it there through an httputil.ReverseProxy, and keeps the
// upstreams' latency, health and drain state. Create it with NewPicker and stop it with Close (or
// Config.Context). All methods are safe for concurrent use.
type Picker struct {
	cfg    Config
	engine *core.Engine
	proxy  *httputil.ReverseProxy
	rt     transport
	// The rejection headers, built once (nil retryAfter: none).
	retryAfter, rejectedBy []string
	// base is what each upstream's transport is cloned from.
	base *http.Transport
}

// New creates a Picker (see NewPicker) and returns its Handler. Its health goroutine stops when Config.Context
// is done; with no Context it runs for the life of the process.
func New(config ...Config) func(http.Handler) http.Handler {
	return NewPicker(config...).Handler()
}

// NewPicker creates a Picker over Config.Servers and the addresses of Config.Discover, and starts its health
// checks; the first round starts at once and NewPicker does not wait for it (with Config.Discover it waits for
// the first answers, each at most half its interval). It panics, naming the field, when the config is invalid.
//
// Each upstream has its own *http.Transport, a clone of http.DefaultTransport (when it is one) without its
// Proxy (upstreams are reached directly) and its dialer (Config.Dial dials), adjusted by Config.ConfigureClient.
func NewPicker(config ...Config) *Picker {
	cfg := ConfigDefault
	if len(config) > 0 {
		cfg = config[0]
	}
	cfg = cfg.WithDefaults(ConfigDefault)
	cfg.Validate()
	if cfg.ConfigureClient != nil {
		if _, ok := cfg.ConfigureClient.(func(string, *http.Transport)); !ok {
			panic("upstreampick: Config.ConfigureClient must be a func(server string, t *http.Transport)")
		}
	}
	p := &Picker{cfg: cfg}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		p.base = t.Clone()
	} else {
		p.base = &http.Transport{}
	}
	p.base.Proxy, p.base.DialContext, p.base.DialTLSContext = nil, nil, nil
	p.engine = core.NewEngine(cfg, nil, p.newClient)
	p.rt = transport{p: p}
	p.proxy = &httputil.ReverseProxy{Rewrite: p.Rewrite, Transport: p.rt, ErrorHandler: p.ErrorHandler}
	if ra := p.engine.RetryAfter(); ra != nil {
		p.retryAfter = []string{string(ra)}
	}
	p.rejectedBy = []string{string(p.engine.RejectedBy())}
	return p
}

// Handler returns the middleware: a request Config.Next skips goes to the next handler; every other one is
// proxied to a picked upstream (the next handler is not called). When no upstream is pickable it answers as
// Reject does. It answers 504 when the upstream did not answer within Config.Timeout and 502 on any other
// upstream failure. Every call returns an equivalent middleware over the same Picker.
func (p *Picker) Handler() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p.cfg.Next != nil && p.cfg.Next(r) {
				next.ServeHTTP(w, r)
				return
			}
			p.ServeHTTP(w, r)
		})
	}
}

// pickKey is the context key of a request's pick.
type pickKey struct{}

// pick is the upstream chosen for one request, shared by Rewrite, Transport and Reject through the request's
// context; rejected tells that the request was counted as rejected.
type pick struct {
	u        *core.Upstream
	rejected bool
}

// pickOf returns r's pick; nil when r did not come through ServeHTTP or Rewrite.
func pickOf(r *http.Request) *pick {
	pk, _ := r.Context().Value(pickKey{}).(*pick)
	return pk
}

// ServeHTTP proxies r to a picked upstream, as Handler does for a request Config.Next does not skip (Next plays
// no part here: there is no next handler). A Picker is thus the http.Handler of a mux pattern.
func (p *Picker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u := p.engine.PickUpstream()
	if u == nil {
		p.engine.Reject()
		p.answerReject(w, r)
		return
	}
	p.engine.Admit()
	ctx, cancel := context.WithTimeout(r.Context(), p.engine.Timeout())
	defer cancel()
	p.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, pickKey{}, &pick{u: u})))
}

// Rewrite is the Rewrite of the Picker's ReverseProxy, for one of your own (with Transport and ErrorHandler):
// it points the outbound request at the upstream picked for it (picking one now when the request did not come
// through ServeHTTP), and sets the X-Forwarded-For, -Host and -Proto headers (pr.SetXForwarded). When nothing is
// pickable it leaves the URL alone, and Transport returns ErrNoUpstream.
func (p *Picker) Rewrite(pr *httputil.ProxyRequest) {
	pk := pickOf(pr.Out)
	if pk == nil {
		pk = &pick{u: p.engine.PickUpstream()}
		if pk.u == nil {
			p.engine.Reject()
			pk.rejected = true
		} else {
			p.engine.Admit()
		}
		pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), pickKey{}, pk))
	}
	if pk.u != nil {
		pr.SetURL(clientOf(pk.u).target)
	}
	pr.SetXForwarded()
}

// Transport returns the RoundTripper of the Picker's ReverseProxy, for one of your own with Rewrite: it sends a
// request Rewrite prepared through its upstream's transport, counts it in flight on that upstream until the
// response body is closed, reports the connection's outcome to the upstream's health, and retries another
// upstream as the Fiber adapters do (see Config.Retries). A request Rewrite found no upstream for, or that did
// not go through Rewrite, gets ErrNoUpstream.
func (p *Picker) Transport() http.RoundTripper { return p.rt }

// ErrorHandler is the ErrorHandler of the Picker's ReverseProxy, for one of your own: ErrNoUpstream is answered
// by Reject, a timeout (Config.Timeout, or the request's own deadline) by 504, any other error by 502.
func (p *Picker) ErrorHandler(w http.ResponseWriter, r *http.Request, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, ErrNoUpstream):
		p.Reject(w, r)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		w.WriteHeader(http.StatusBadGateway)
	}
}

// Reject answers r as the middleware does when no upstream can take it: it sets the Retry-After (unless
// Config.RetryAfter is negative) and Fiberguard-Rejected-By headers, counts the request as rejected (in Status
// and the requests_total metric) unless the Picker counted it already, and calls Config.OnReject.
func (p *Picker) Reject(w http.ResponseWriter, r *http.Request) {
	if pk := pickOf(r); pk == nil || !pk.rejected {
		p.engine.Reject()
		if pk != nil {
			pk.rejected = true
		}
	}
	p.answerReject(w, r)
}

// answerReject sets the rejection headers and calls OnReject; it counts nothing. It does not allocate: the
// header values are assigned, built once.
func (p *Picker) answerReject(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if p.retryAfter != nil {
		h[core.HeaderRetryAfter] = p.retryAfter
	}
	h[core.HeaderRejectedBy] = p.rejectedBy
	p.cfg.OnReject.ServeHTTP(w, r)
}

// SetServers replaces the upstream list; with Config.Discover it replaces the static part only (see
// core.Config.Servers). New servers start unmeasured; kept servers keep their state; removed servers drain:
// they get no new requests and are forgotten once their requests in flight have finished or
// Config.DrainTimeout has passed. An invalid list is rejected as a whole with an error.
func (p *Picker) SetServers(servers []string) error { return p.engine.SetServers(servers) }

// Pick chooses an upstream for a request the caller sends itself, and counts it as a pick. It returns the
// server as configured, or false when no upstream is pickable (answer the request with Reject then).
func (p *Picker) Pick() (server string, ok bool) { return p.engine.Pick() }

// Status returns a fresh view: every upstream, listed ones first, then draining ones; and every discovered
// name.
func (p *Picker) Status() core.Status { return p.engine.Status() }

// Close stops the health checks and the resolutions of Config.Discover, waits for their goroutines to end,
// unregisters the metrics and closes idle upstream connections; Config.Context being done does the same.
// Requests are still answered afterwards, through the last pickable set. Close is idempotent and returns nil.
func (p *Picker) Close() error { return p.engine.Close() }

// upstreamClient is an upstream's transport and its URL.
type upstreamClient struct {
	t      *http.Transport
	target *url.URL
}

func (c *upstreamClient) CloseIdleConnections() { c.t.CloseIdleConnections() }

func clientOf(u *core.Upstream) *upstreamClient { return u.Client().(*upstreamClient) }

// dialError marks a failure to connect to an upstream: the request was not sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// newClient is the core's newClient: u's transport, whose dials report to u's health.
func (p *Picker) newClient(e *core.Engine, u *core.Upstream) core.UpstreamClient {
	t := p.base.Clone()
	if configure, _ := p.cfg.ConfigureClient.(func(string, *http.Transport)); configure != nil {
		configure(u.Server(), t)
		t.Proxy = nil
	}
	report := func(conn net.Conn, err error) (net.Conn, error) {
		if err != nil {
			e.Failed(u)
			return nil, &dialError{err: err}
		}
		e.Connected(u)
		return conn, nil
	}
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dial != nil {
			return report(dial(ctx, network, addr))
		}
		return report(e.Dial(ctx, addr))
	}
	if dialTLS := t.DialTLSContext; dialTLS != nil {
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return report(dialTLS(ctx, network, addr))
		}
	}
	scheme := "http"
	if u.TLS() {
		scheme = "https"
	}
	return &upstreamClient{t: t, target: &url.URL{Scheme: scheme, Host: u.Addr()}}
}

// transport is the Picker's RoundTripper.
type transport struct{ p *Picker }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	pk := pickOf(req)
	if pk == nil || pk.u == nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, ErrNoUpstream
	}
	e := t.p.engine
	resp, err := send(e, pk.u, req)
	if err == nil || !retryable(err, req) {
		return resp, err
	}
	tried := []*core.Upstream{pk.u}
	for range e.Retries() {
		if req.Context().Err() != nil {
			return nil, err
		}
		u := e.PickOther(tried)
		if u == nil {
			return nil, err
		}
		tried = append(tried, u)
		retry := req.Clone(req.Context())
		target := clientOf(u).target
		retry.URL.Scheme, retry.URL.Host = target.Scheme, target.Host
		if req.Host == req.URL.Host {
			retry.Host = ""
		}
		if resp, err = send(e, u, retry); err == nil || !retryable(err, retry) {
			return resp, err
		}
	}
	return nil, err
}

// send sends req to u through u's transport, counts it in flight until the response body is closed, and records
// a response as a success of u and a broken connection as a failure (a failed dial was counted by the dialer).
func send(e *core.Engine, u *core.Upstream, req *http.Request) (*http.Response, error) {
	u.Begin()
	resp, err := clientOf(u).t.RoundTrip(req)
	if err != nil {
		u.End()
		if connectionLost(err) {
			e.Failed(u)
		}
		return nil, err
	}
	e.Connected(u)
	resp.Body = &endingBody{ReadCloser: resp.Body, u: u}
	return resp, nil
}

// endingBody ends its upstream's in-flight count when the response body is closed.
type endingBody struct {
	io.ReadCloser
	u    *core.Upstream
	once sync.Once
}

func (b *endingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.u.End)
	return err
}

// retryable reports whether req may go to another upstream after err: it has no body (net/http closes a body on
// failure, so it cannot be sent again) and the connection could not be made (nothing was sent), or it broke
// before the response and the method is idempotent.
func retryable(err error, req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	var de *dialError
	if errors.As(err, &de) {
		return true
	}
	return connectionLost(err) && idempotent(req.Method)
}

// connectionLost reports whether err means the upstream's connection broke (as opposed to a timeout or a
// cancellation): it counts towards marking the upstream unhealthy.
func connectionLost(err error) bool {
	var de *dialError
	if errors.As(err, &de) {
		return false // counted by the dialer
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// idempotent reports whether method is idempotent (RFC 9110, 9.2.2).
func idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}
