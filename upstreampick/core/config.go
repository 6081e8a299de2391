package core

import (
	"context"
	"net"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config defines the config of a Picker, for any web framework: C is the framework's request context and H its
// handler type (the Fiber v2 adapter's Config is Config[*fiber.Ctx, fiber.Handler]). Each field is documented
// here once, with its default; Defaults returns the default config, WithDefaults fills the zero fields and
// Validate checks the values.
type Config[C, H any] struct {
	// Next defines a function to skip the Handler when it returns true. It plays no part in LBClient, where
	// proxy.Config.Next does the same.
	//
	// Optional. Default: nil
	Next func(c C) bool

	// Servers lists the upstreams, as "http://host:port", "https://host:port" or "host:port" (http). With a
	// scheme the port may be left out for the scheme's default (80 or 443); "host" alone is rejected. A host
	// is a name or an IP address ("[::1]:8080"); names are never resolved here, so "localhost:80" and
	// "127.0.0.1:80" are two servers. One server listed twice, in any spelling ("127.0.0.1:80",
	// "http://127.0.0.1", "HTTP://127.0.0.1:80/"), is rejected. The list can be replaced at run time with
	// Picker.SetServers.
	//
	// Required, unless Discover names at least one name.
	Servers []string

	// Discover adds the upstreams that DNS names resolve to: DNS("http://api.ns.svc:8080", interval) for the
	// addresses of A/AAAA records, DNSSRV("_http._tcp.api.ns.svc", "http", interval) for SRV records. Each name
	// is resolved by NewPicker (which waits for the answers, each at most half its interval), then every
	// interval (0: 5 s), and at once, at most once a second, while no upstream is pickable. A new address starts
	// unmeasured; an address missing from three answers in a row drains, as a server SetServers removes does;
	// one that comes back aborts its drain. An upstream is its address: its tier, average and health survive
	// answers in any order. A failed resolution, and an answer with no address (NXDOMAIN included), change
	// nothing: a name keeps its last addresses. Status().Discovery and the resolutions_total metric show each
	// name; each distinct failure is logged once.
	//
	// Optional. Default: nil (Servers only)
	Discover []Discovery

	// Mode selects how an upstream is picked: ModeLatency (random inside the nearest tier), ModeLeastPending
	// (power of two choices inside the nearest tier) or ModeRandom (ignores latency).
	//
	// Optional. Default: ModeLatency
	Mode Mode

	// HealthInterval is the time between two health rounds. Each round dials every upstream once (TCP connect
	// only) and folds the connect time into its average.
	//
	// Optional. Default: 1 * time.Second
	HealthInterval time.Duration

	// HealthTimeout bounds one health dial, and separately the name resolution before it. It must be shorter
	// than HealthInterval. A dial that times out is a failure.
	//
	// Optional. Default: HealthInterval / 2
	HealthTimeout time.Duration

	// DrainTimeout bounds how long an upstream removed by SetServers waits for its requests in flight before it
	// is forgotten. It gets no new requests meanwhile.
	//
	// Optional. Default: 30 * time.Second
	DrainTimeout time.Duration

	// Timeout is the request timeout of the client layer: of the LBClient and the Handler of the Fiber adapters
	// (fasthttp.LBClient.Timeout), of the transport of the net/http adapter.
	//
	// Optional. Default: 1 * time.Second
	Timeout time.Duration

	// Retries is how many more upstreams a request may try after a connection to its upstream could not be
	// established. Nothing was sent then, so a retry is safe for every method. 0 uses the default; a negative
	// value disables retries.
	//
	// Optional. Default: 2
	Retries int

	// ConfigureClient, when set, adjusts each upstream's client before first use: a func(server string, c
	// *fasthttp.HostClient) for the Fiber adapters, a func(server string, t *http.Transport) for the net/http
	// adapter. It is typed any so that this Config names no client package; a func of another type makes the
	// adapter's New panic, naming this field.
	//
	// Fiber adapters: buffer sizes, TLSConfig, MaxConns, ... Addr and IsTLS are set from the server; Dial and
	// DialTimeout are wrapped to count connection failures, and one set here replaces Config.Dial for that
	// upstream's requests (health dials keep Config.Dial). net/http adapter: each upstream has its own
	// *http.Transport (a clone of the adapter's base transport); a DialContext or DialTLSContext set here
	// replaces Config.Dial for that upstream's requests.
	//
	// Optional. Default: nil
	ConfigureClient any

	// Resolver resolves the names of Discover: a *net.Resolver (say, with a Dial of its own to reach a given
	// DNS server) or any type with its LookupHost and LookupSRV methods.
	//
	// Optional. Default: nil (net.DefaultResolver)
	Resolver Resolver

	// LookupHost resolves an upstream's host name before a health dial, so name resolution is never part of
	// the measured connect time. It is not called for an upstream written as an IP address, as every
	// discovered one is.
	//
	// Optional. Default: nil (net.DefaultResolver.LookupHost)
	LookupHost func(ctx context.Context, host string) (addrs []string, err error)

	// Dial opens a connection to addr ("host:port") for health dials and requests. A health dial passes the
	// address LookupHost returned and a ctx bounded by HealthTimeout, and closes the connection at once; its
	// connect-time sample is the time Dial took (with the default dialer on Linux, the TCP handshake's round
	// trip as the kernel timed it when that is shorter, so a busy process does not inflate it). A request's dial
	// passes the configured host and a ctx bounded by the dial timeout; TLS, for https upstreams, is layered over
	// the connection returned. A Dial or DialTimeout set by ConfigureClient takes precedence for requests.
	//
	// Optional. Default: nil (a net.Dialer over TCP)
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	// OnReject answers a request the middleware rejects. Before calling it the middleware sets the
	// Retry-After and Fiberguard-Rejected-By headers (see RetryAfter and Name). Handler rejects a request when
	// no upstream can take it (every one is unhealthy or draining); LBClient cannot call it and returns the
	// adapter's ErrNoUpstream instead, which the app's ErrorHandler answers with Picker.Reject, and Reject calls
	// it.
	//
	// Optional. Default: 503 with the body "upstreampick: no upstream available\n" (the adapter's ConfigDefault)
	OnReject H

	// RetryAfter is the Retry-After header of a rejection: whole seconds, rounded up, at least 1.
	// A negative value sends no Retry-After.
	//
	// Optional. Default: time.Second
	RetryAfter time.Duration

	// Name identifies this instance: the `name` label of every metric and the second part of the
	// Fiberguard-Rejected-By header. Instances registered on one Registerer need distinct names.
	//
	// Optional. Default: "default"
	Name string

	// Registerer receives the metrics.
	//
	// Optional. Default: nil (prometheus.DefaultRegisterer)
	Registerer prometheus.Registerer

	// DisableMetrics registers no metrics.
	//
	// Optional. Default: false
	DisableMetrics bool

	// Context stops the background work when done, as Close does.
	//
	// Optional. Default: nil (runs until Close)
	Context context.Context
}

// Logger is where an Engine logs: metrics it could not register. The adapters pass their Fiber version's log
// package; nil means the standard library's log package.
type Logger interface {
	Warnf(format string, v ...any)
}

// Defaults returns the default config, with onReject answering the requests no upstream can take: an adapter's
// ConfigDefault. Servers and Discover have no default.
func Defaults[C, H any](onReject H) Config[C, H] {
	return Config[C, H]{
		Mode:           ModeLatency,
		HealthInterval: time.Second,
		DrainTimeout:   30 * time.Second,
		Timeout:        time.Second,
		Retries:        2,
		OnReject:       onReject,
		RetryAfter:     time.Second,
		Name:           "default",
	}
}

// WithDefaults returns c with its zero fields taken from d (an adapter's ConfigDefault). A zero HealthTimeout is
// half the HealthInterval; a zero Retries is d's and a negative one becomes 0: no retries.
func (c Config[C, H]) WithDefaults(d Config[C, H]) Config[C, H] {
	if c.HealthInterval == 0 {
		c.HealthInterval = d.HealthInterval
	}
	if c.HealthTimeout == 0 {
		c.HealthTimeout = c.HealthInterval / 2
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = d.DrainTimeout
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	switch {
	case c.Retries == 0:
		c.Retries = d.Retries
	case c.Retries < 0:
		c.Retries = 0
	}
	if isNil(c.OnReject) {
		c.OnReject = d.OnReject
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = d.RetryAfter
	}
	if c.Name == "" {
		c.Name = d.Name
	}
	return c
}

// Validate panics, naming the field, when c (filled by WithDefaults) is invalid.
func (c Config[C, H]) Validate() {
	c.validateSettings()
	if isNil(c.OnReject) {
		panic("upstreampick: Config.OnReject must not be nil")
	}
}

// validateSettings is Validate without the framework's fields: what an Engine needs.
func (c Config[C, H]) validateSettings() {
	switch {
	case len(c.Servers) == 0 && len(c.Discover) == 0:
		panic("upstreampick: Config.Servers must list at least one server, or Config.Discover a name")
	case c.Mode < ModeLatency || c.Mode > ModeRandom:
		panic("upstreampick: Config.Mode must be ModeLatency, ModeLeastPending or ModeRandom")
	case c.HealthInterval < 0:
		panic("upstreampick: Config.HealthInterval must be positive")
	case c.HealthTimeout < 0 || c.HealthTimeout >= c.HealthInterval:
		panic("upstreampick: Config.HealthTimeout must be positive and shorter than Config.HealthInterval")
	case c.DrainTimeout < 0:
		panic("upstreampick: Config.DrainTimeout must be positive")
	case c.Timeout < 0:
		panic("upstreampick: Config.Timeout must be positive")
	case !headerSafe(c.Name):
		panic("upstreampick: Config.Name must not contain control characters")
	}
	if _, err := parseServers(c.Servers); err != nil {
		panic("upstreampick: Config.Servers: " + err.Error())
	}
	if why := validateDiscover(c.Discover); why != "" {
		panic("upstreampick: " + why)
	}
}

// headerSafe reports whether s can be sent in a header value as is.
func headerSafe(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// isNil reports whether a handler of any type (a func, an interface) is nil: a type parameter cannot be
// compared with nil.
func isNil[H any](h H) bool {
	v := reflect.ValueOf(&h).Elem()
	switch v.Kind() {
	case reflect.Interface:
		// A handler interface holding a nil func (http.HandlerFunc(nil)) would panic when called: nil too.
		return v.IsNil() || v.Elem().Kind() == reflect.Func && v.Elem().IsNil()
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
}
