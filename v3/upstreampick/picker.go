package upstreampick

import (
	"github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/valyala/fasthttp"
)

// Picker chooses an upstream for each request and keeps the upstreams' latency, health and drain state. Create
// it with NewPicker and stop it with Close (or Config.Context). All methods are safe for concurrent use.
type Picker struct {
	cfg  Config
	core *core.Picker
}

// NewPicker creates a Picker over cfg.Servers and the addresses of cfg.Discover, and starts its health checks;
// the first round starts at once and NewPicker does not wait for it. With Discover it first resolves every name
// at once and waits for the answers, each at most half its interval. Until an upstream's first dial completes
// it is picked like a member of the nearest tier. NewPicker panics, naming the field, when the config is
// invalid.
func NewPicker(config ...Config) *Picker {
	cfg := configDefault(config...)
	cfg.validate()
	return &Picker{cfg: cfg, core: core.New(cfg.coreConfig())}
}

// LBClient returns the client to pass to proxy.Balancer:
//
//	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))
//
// It holds a single fasthttp.BalancingClient that picks the upstream itself, so LBClient's own least-loaded
// choice and failure penalty play no part. Its Timeout is Config.Timeout. Every call returns the same client.
// When no upstream can take a request it returns ErrNoUpstream.
func (p *Picker) LBClient() *fasthttp.LBClient { return p.core.LBClient() }

// BalancingClient returns the picker as a fasthttp.BalancingClient, for an LBClient of your own.
func (p *Picker) BalancingClient() fasthttp.BalancingClient { return p.core.BalancingClient() }

// SetServers replaces the upstream list; with Config.Discover it replaces the static part only (what
// Config.Servers listed): discovered upstreams stay, and an empty list, allowed then, leaves only them. New
// servers start unmeasured and pickable; kept servers keep their state (a server is matched by scheme, host and
// port, so "127.0.0.1:80" keeps the state of "http://127.0.0.1" and takes the new spelling as its name; so is a
// discovered address listed here too); removed servers drain: they get no new requests and are forgotten (with
// their metrics) once their requests in flight have finished or Config.DrainTimeout has passed, checked every
// HealthInterval. Listing a draining server again aborts its drain. An invalid list is rejected as a whole with
// an error.
func (p *Picker) SetServers(servers []string) error { return p.core.SetServers(servers) }

// Pick chooses an upstream for a request the caller sends itself, and counts it as a pick. It returns the
// server as configured, or false when no upstream is pickable (answer the request with Reject then). It does
// not allocate.
func (p *Picker) Pick() (server string, ok bool) { return p.core.Pick() }

// Status returns a fresh view: every upstream, listed ones first (the static servers in their order, then each
// discovered name's addresses), then draining ones; and every discovered name.
func (p *Picker) Status() Status { return p.core.Status() }

// Close stops the health checks and the resolutions of Config.Discover, waits for their goroutines to end,
// unregisters the metrics and closes idle upstream connections; Config.Context being done does the same.
// Requests, even concurrent ones, are still answered afterwards, through the last pickable set. Close is
// idempotent and returns nil.
func (p *Picker) Close() error { return p.core.Close() }
