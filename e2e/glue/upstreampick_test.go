package glue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	uphttp "github.com/fiberguard/fiberguard/nethttp/upstreampick"
	upv2 "github.com/fiberguard/fiberguard/upstreampick"
	upcore "github.com/fiberguard/fiberguard/upstreampick/core"
	upfast "github.com/fiberguard/fiberguard/upstreampick/core/fasthttpclient"
	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	upv3 "github.com/fiberguard/fiberguard/v3/upstreampick"
	fiberv2 "github.com/gofiber/fiber/v2"
	proxyv2 "github.com/gofiber/fiber/v2/middleware/proxy"
	fiberv3 "github.com/gofiber/fiber/v3"
	proxyv3 "github.com/gofiber/fiber/v3/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
	"go.uber.org/goleak"
)

// upstreampickAdapter is upstreampick's adapter of one version.
type upstreampickAdapter[C any, H ~func(C) error] struct {
	New           func(config ...upcore.Config[C, H]) H
	NewPicker     func(config ...upcore.Config[C, H]) upPicker[H]
	ConfigDefault defaults[upcore.Config[C, H]]
	// idleClients is the version's Config.ConfigureClient that ends an idle upstream connection soon, so that
	// none outlives the test's bubble.
	idleClients any
}

// upPicker is a version's Picker: the fasthttp one for Fiber, the net/http adapter's for net/http.
type upPicker[H any] interface {
	Handler() H
	Status() upcore.Status
	Close() error
}

// upstreampickFiber is upstreampick's adapter of one Fiber version with the version's proxy.Balancer.
type upstreampickFiber[C upfast.Ctx, H ~func(C) error] struct {
	upstreampickAdapter[C, H]
	NewFiberPicker func(config ...upcore.Config[C, H]) *upfast.Picker[C, H]
	ErrNoUpstream  error
	// balancer is proxy.Balancer over client.
	balancer func(client *fasthttp.LBClient) H
	// balancerApp is an app proxying every request through proxy.Balancer with p's client, its ErrorHandler
	// answering ErrNoUpstream with p.Reject as the README shows.
	balancerApp func(p *upfast.Picker[C, H]) fiberApp[C, H]
}

// upIdleFasthttp is the Fiber versions' idleClients.
func upIdleFasthttp(_ string, c *fasthttp.HostClient) { c.MaxIdleConnDuration = 100 * time.Millisecond }

var upstreampickV2 = upstreampickFiber[*fiberv2.Ctx, fiberv2.Handler]{
	upstreampickAdapter: upstreampickAdapter[*fiberv2.Ctx, fiberv2.Handler]{upv2.New,
		func(config ...upv2.Config) upPicker[fiberv2.Handler] { return upv2.NewPicker(config...) },
		fiberDefaults(&upv2.ConfigDefault), upIdleFasthttp},
	NewFiberPicker: upv2.NewPicker,
	ErrNoUpstream:  upv2.ErrNoUpstream,
	balancer: func(client *fasthttp.LBClient) fiberv2.Handler {
		return proxyv2.Balancer(proxyv2.Config{Client: client})
	},
	balancerApp: func(p *upv2.Picker) fiberApp[*fiberv2.Ctx, fiberv2.Handler] {
		a := fiberv2.New(fiberv2.Config{DisableStartupMessage: true, ErrorHandler: func(c *fiberv2.Ctx, err error) error {
			if errors.Is(err, upv2.ErrNoUpstream) {
				return p.Reject(c)
			}
			return fiberv2.DefaultErrorHandler(c, err)
		}})
		a.Use(proxyv2.Balancer(proxyv2.Config{Client: p.LBClient()}))
		return asAppV2(a)
	},
}

var upstreampickV3 = upstreampickFiber[fiberv3.Ctx, fiberv3.Handler]{
	upstreampickAdapter: upstreampickAdapter[fiberv3.Ctx, fiberv3.Handler]{upv3.New,
		func(config ...upv3.Config) upPicker[fiberv3.Handler] { return upv3.NewPicker(config...) },
		fiberDefaults(&upv3.ConfigDefault), upIdleFasthttp},
	NewFiberPicker: upv3.NewPicker,
	ErrNoUpstream:  upv3.ErrNoUpstream,
	balancer: func(client *fasthttp.LBClient) fiberv3.Handler {
		return proxyv3.Balancer(proxyv3.Config{Client: client})
	},
	balancerApp: func(p *upv3.Picker) fiberApp[fiberv3.Ctx, fiberv3.Handler] {
		a := fiberv3.New(fiberv3.Config{ErrorHandler: func(c fiberv3.Ctx, err error) error {
			if errors.Is(err, upv3.ErrNoUpstream) {
				return p.Reject(c)
			}
			return fiberv3.DefaultErrorHandler(c, err)
		}})
		a.Use(proxyv3.Balancer(proxyv3.Config{Client: p.LBClient()}))
		return asAppV3(a)
	},
}

var upstreampickNet = upstreampickAdapter[*httpCtx, httpHandler]{
	func(config ...upcore.Config[*httpCtx, httpHandler]) httpHandler {
		return middleware(uphttp.New(convertConfigs[uphttp.Config](config)...))
	},
	func(config ...upcore.Config[*httpCtx, httpHandler]) upPicker[httpHandler] {
		return upstreampickHTTP{uphttp.NewPicker(convertConfigs[uphttp.Config](config)...)}
	},
	httpDefaults[upcore.Config[*httpCtx, httpHandler]](&uphttp.ConfigDefault),
	func(_ string, t *http.Transport) { t.IdleConnTimeout = 100 * time.Millisecond },
}

// upstreampickHTTP is the net/http Picker with its middleware in the net/http version's chain.
type upstreampickHTTP struct{ *uphttp.Picker }

func (p upstreampickHTTP) Handler() httpHandler { return middleware(p.Picker.Handler()) }

func TestUpstreampick(t *testing.T) {
	each(t, upstreampickV2.upstreampickAdapter, upstreampickV3.upstreampickAdapter, upstreampickNet,
		func(t *testing.T, a upstreampickAdapter[*fiberv2.Ctx, fiberv2.Handler]) { upstreampickSuite(t, v2, a) },
		func(t *testing.T, a upstreampickAdapter[fiberv3.Ctx, fiberv3.Handler]) { upstreampickSuite(t, v3, a) },
		func(t *testing.T, a upstreampickAdapter[*httpCtx, httpHandler]) { upstreampickSuite(t, netHTTP, a) })
}

// TestUpstreampickFasthttp tests what only the Fiber adapters have (fasthttp clients for proxy.Balancer); the
// net/http Picker's own ReverseProxy parts are tested in nethttp/upstreampick.
func TestUpstreampickFasthttp(t *testing.T) {
	both(t, upstreampickV2, upstreampickV3,
		func(t *testing.T, a upstreampickFiber[*fiberv2.Ctx, fiberv2.Handler]) {
			upstreampickFasthttpSuite(t, v2, a)
		},
		func(t *testing.T, a upstreampickFiber[fiberv3.Ctx, fiberv3.Handler]) {
			upstreampickFasthttpSuite(t, v3, a)
		})
}

// Upstream addresses of the in-memory network.
const (
	upAddrA = "10.0.0.1:8080"
	upAddrB = "10.0.0.2:8080"
	// upDead is an address of the in-memory network where nothing answers.
	upDead = "10.0.0.9:80"
)

// upstreampickSuite is every test of an upstreampick adapter's Handler through real apps of one version, its
// upstreams on an in-memory network.
func upstreampickSuite[C any, H ~func(C) error](t *testing.T, fv version[C, H], a upstreampickAdapter[C, H]) {
	testConfig := func(servers ...string) upcore.Config[C, H] { return upTestConfig[C, H](a.idleClients, servers...) }
	picker := func(n *memnet.Net, cfg upcore.Config[C, H]) upPicker[H] { return upPickerOn(n, cfg, a.NewPicker) }
	handlerApp := func(h H) app[C, H] { return upUsing(fv.newApp(), h) }
	// rejectingApp is an app using the Handler of a Picker over cfg once its upstreams are unhealthy, so that it
	// rejects every request.
	rejectingApp := func(t *testing.T, n *memnet.Net, cfg upcore.Config[C, H]) (app[C, H], upPicker[H]) {
		t.Helper()
		p := picker(n, cfg)
		memnet.Eventually(t, "upstreams unhealthy", func() bool { return upAllUnhealthy(p.Status()) })
		return handlerApp(p.Handler()), p
	}

	t.Run("NewPickerPanicsNamingTheField", func(t *testing.T) {
		tests := []struct {
			cfg   upcore.Config[C, H]
			field string
		}{
			// One case per field: the core's tests hold the full table.
			{upcore.Config[C, H]{}, "Config.Servers"},
			{upcore.Config[C, H]{Servers: []string{"ftp://127.0.0.1:1"}}, "Config.Servers"},
			{upcore.Config[C, H]{Servers: []string{"127.0.0.1:1"}, Mode: upcore.Mode(7)}, "Config.Mode"},
			{upcore.Config[C, H]{Servers: []string{"127.0.0.1:1"}, HealthInterval: -time.Second}, "Config.HealthInterval"},
			// Longer than the default HealthInterval.
			{upcore.Config[C, H]{Servers: []string{"127.0.0.1:1"}, HealthTimeout: 2 * time.Second}, "Config.HealthTimeout"},
			{upcore.Config[C, H]{Servers: []string{"127.0.0.1:1"}, DrainTimeout: -1}, "Config.DrainTimeout"},
			{upcore.Config[C, H]{Servers: []string{"127.0.0.1:1"}, Timeout: -1}, "Config.Timeout"},
			{upcore.Config[C, H]{Servers: []string{"127.0.0.1:1"}, Name: "a\r\nSet-Cookie: x"}, "Config.Name"},
			{upcore.Config[C, H]{Discover: []upcore.Discovery{upcore.DNS("api.test", 0)}}, "Config.Discover"},
		}
		for _, tt := range tests {
			for ctor, build := range map[string]func(upcore.Config[C, H]){
				"NewPicker": func(cfg upcore.Config[C, H]) { _ = a.NewPicker(cfg).Close() },
				"New":       func(cfg upcore.Config[C, H]) { _ = a.New(cfg) },
			} {
				t.Run(ctor+"/"+tt.field, func(t *testing.T) {
					defer func() {
						r := recover()
						msg, _ := r.(string)
						if !strings.HasPrefix(msg, "upstreampick: "+tt.field) {
							t.Fatalf("panic %v, want a message naming %s", r, tt.field)
						}
					}()
					tt.cfg.Dial = memnet.Refuse
					build(tt.cfg)
				})
			}
		}
	})

	t.Run("ConfigDefaultOnReject", func(t *testing.T) {
		cl := handlerApp(a.ConfigDefault.get().OnReject).Call("/")
		cl.Do()
		if cl.Status() != http.StatusServiceUnavailable || cl.Body() != "upstreampick: no upstream available\n" {
			t.Fatalf("default OnReject: %d %q", cl.Status(), cl.Body())
		}
		if ct, _ := cl.Header("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Fatalf("default OnReject: Content-Type %q, want text/plain; charset=utf-8", ct)
		}
	})

	// The Handler proxies each request, path and query included, to both upstreams of the nearest tier and
	// answers with their responses; every pick is counted, and none is left in flight.
	t.Run("ProxiesToEveryUpstream", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			upServeEchoes(n)
			p := picker(n, testConfig(upAddrA, upAddrB))
			memnet.Eventually(t, "both upstreams measured", func() bool { return upAllSampled(p.Status()) })
			cl := handlerApp(p.Handler()).Call("/x/y?q=1")
			seen := map[string]int{}
			for range 200 {
				cl.Do()
				name, uri, _ := strings.Cut(cl.Body(), " ")
				if cl.Status() != http.StatusOK || uri != "/x/y?q=1" {
					t.Fatalf("status %d body %q", cl.Status(), cl.Body())
				}
				seen[name]++
			}
			// 1 and 2 ms are one tier: both get traffic (each at least 40 of 200; p < 1e-9 to fail).
			if len(seen) != 2 || seen["a"] < 40 || seen["b"] < 40 {
				t.Fatalf("spread %v, want both upstreams", seen)
			}
			st := p.Status()
			if st.Admitted != 200 || st.Rejected != 0 || st.Upstreams[0].Picks+st.Upstreams[1].Picks != 200 {
				t.Fatalf("status %+v", st)
			}
			for _, u := range st.Upstreams {
				if u.InFlight != 0 {
					t.Fatalf("%s: %d in flight after every response was read", u.Server, u.InFlight)
				}
			}
		})
	})

	t.Run("RejectionHeaders", func(t *testing.T) {
		tests := []struct {
			name       string
			retryAfter time.Duration
			instance   string
			wantRetry  string // "" means no header
			wantBy     string
		}{
			{"zero is the default 1s", 0, "", "1", "upstreampick/default"},
			{"1ns rounds up to 1", time.Nanosecond, "", "1", "upstreampick/default"},
			{"1.5s rounds up to 2", 1500 * time.Millisecond, "", "2", "upstreampick/default"},
			{"negative sends none", -time.Second, "", "", "upstreampick/default"},
			{"custom name", 0, "api", "1", "upstreampick/api"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
					cfg := testConfig(upDead)
					cfg.RetryAfter, cfg.Name = tt.retryAfter, tt.instance
					ap, _ := rejectingApp(t, n, cfg)
					cl := ap.Call("/")
					cl.Do()
					if cl.Status() != http.StatusServiceUnavailable || cl.Body() != "upstreampick: no upstream available\n" {
						t.Fatalf("status %d body %q, want the default OnReject", cl.Status(), cl.Body())
					}
					if retry, present := cl.Header("Retry-After"); retry != tt.wantRetry || (tt.wantRetry == "") == present {
						t.Fatalf("Retry-After %q (present %v), want %q", retry, present, tt.wantRetry)
					}
					if got, _ := cl.Header("Fiberguard-Rejected-By"); got != tt.wantBy {
						t.Fatalf("Fiberguard-Rejected-By %q, want %q", got, tt.wantBy)
					}
				})
			})
		}
	})

	// OnReject runs after both headers are set; the rejection is counted, in Status and requests_total.
	t.Run("OnRejectSeesBothHeaders", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			reg := prometheus.NewRegistry()
			cfg := testConfig(upDead)
			cfg.Registerer, cfg.Name, cfg.RetryAfter = reg, "edge", 2500*time.Millisecond
			var seenRetry, seenBy string
			cfg.OnReject = func(c C) error {
				seenRetry, seenBy = fv.respHeader(c, "Retry-After"), fv.respHeader(c, "Fiberguard-Rejected-By")
				return fv.send(c, http.StatusTooManyRequests, "custom")
			}
			ap, p := rejectingApp(t, n, cfg)
			cl := ap.Call("/")
			cl.Do()
			if cl.Status() != http.StatusTooManyRequests || cl.Body() != "custom" {
				t.Fatalf("status %d body %q, want OnReject's answer", cl.Status(), cl.Body())
			}
			if seenRetry != "3" || seenBy != "upstreampick/edge" {
				t.Fatalf("OnReject saw Retry-After %q, Fiberguard-Rejected-By %q; want 3 and upstreampick/edge", seenRetry, seenBy)
			}
			if got, _ := cl.Header("Retry-After"); got != "3" {
				t.Fatalf("response Retry-After %q, want 3", got)
			}
			if st := p.Status(); st.Rejected != 1 || st.Admitted != 0 {
				t.Fatalf("status %+v, want 1 rejected", st)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(upRequestsMetric(0, 1)), "fiberguard_upstreampick_requests_total"); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("HandlerErrors", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			const slow, hangUp, ok = "10.0.0.5:80", "10.0.0.6:80", "10.0.0.7:80"
			n.Serve(slow, time.Millisecond, func(c *fasthttp.RequestCtx) {
				time.Sleep(300 * time.Millisecond)
				c.SetBodyString("slow")
			})
			n.Serve(hangUp, time.Millisecond, nil)
			n.Set(hangUp, memnet.HangUp) // closes every connection without answering
			n.Serve(ok, time.Millisecond, func(c *fasthttp.RequestCtx) { c.SetBodyString("ok") })

			cfg := testConfig(slow)
			cfg.Timeout = 50 * time.Millisecond
			cfg.Next = func(c C) bool { return fv.path(c) == "/local" }
			p := picker(n, cfg)
			app := handlerApp(p.Handler())
			app.Get("/local", func(c C) error { return fv.send(c, http.StatusOK, "local") })
			if code, body := upGet(app, "/local"); code != http.StatusOK || body != "local" {
				t.Fatalf("Next: status %d body %q", code, body)
			}
			if st := p.Status(); st.Admitted != 0 {
				t.Fatalf("a skipped request was counted: %+v", st)
			}
			if code, _ := upGet(app, "/"); code != http.StatusGatewayTimeout {
				t.Fatalf("slow upstream: status %d, want 504", code)
			}
			if code, _ := upGet(handlerApp(picker(n, testConfig(hangUp)).Handler()), "/"); code != http.StatusBadGateway {
				t.Fatalf("hanging-up upstream: status %d, want 502", code)
			}
			// The handler proxies otherwise.
			if code, body := upGet(handlerApp(picker(n, testConfig(ok)).Handler()), "/"); code != http.StatusOK || body != "ok" {
				t.Fatalf("status %d body %q", code, body)
			}
		})
	})

	t.Run("HandlerCallsAreEquivalent", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			n.Serve(upAddrA, time.Millisecond, nil)
			p := picker(n, testConfig(upAddrA))
			for _, h := range []H{p.Handler(), p.Handler()} {
				if code, body := upGet(handlerApp(h), "/"); code != http.StatusOK || body != upAddrA {
					t.Fatalf("status %d body %q", code, body)
				}
			}
			if st := p.Status(); st.Admitted != 2 || st.Upstreams[0].Picks != 2 {
				t.Fatalf("status %+v, want both handlers counted on the one Picker", st)
			}
		})
	})

	// Cancelling Config.Context unregisters the metrics and leaves no goroutine, for New (which returns no
	// handle) and NewPicker alike.
	t.Run("ContextStopsTheHealthGoroutine", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			n.Serve(upAddrA, time.Millisecond, nil)
			before := goleak.IgnoreCurrent()

			ctx, cancel := context.WithCancel(context.Background())
			reg := prometheus.NewRegistry()
			cfg := testConfig(upAddrA)
			cfg.Dial, cfg.Context, cfg.Registerer = n.Dial, ctx, reg
			app := handlerApp(a.New(cfg))
			cfg.Name = "handle"
			p := a.NewPicker(cfg)
			time.Sleep(3*cfg.HealthInterval + cfg.HealthInterval/2) // between rounds
			synctest.Wait()
			if code, body := upGet(app, "/"); code != http.StatusOK || body != upAddrA {
				t.Fatalf("status %d body %q", code, body)
			}
			if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 2 {
				t.Fatalf("tier series %d, want 2 (two instances)", n)
			}

			cancel()
			synctest.Wait()
			if n := testutil.CollectAndCount(reg); n != 0 {
				t.Fatalf("%d series after Context is done, want 0", n)
			}
			// The health goroutines ended; idle connections were closed, so the cleaners end too.
			goleak.VerifyNone(t, before)
			// Requests are still answered.
			if code, _ := upGet(app, "/"); code != http.StatusOK {
				t.Fatalf("request after Context is done: status %d", code)
			}
			_ = p.Close() // idempotent after the Context's close
		})
	})

	t.Run("CloseConcurrentWithRequests", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			n.Serve(upAddrA, time.Millisecond, nil)
			n.Serve(upAddrB, time.Millisecond, nil)
			p := picker(n, testConfig(upAddrA, upAddrB))
			ap := handlerApp(p.Handler())

			var wg sync.WaitGroup
			bad := make(chan string, 8*50)
			for range 8 {
				cl := ap.Call("/")
				wg.Go(func() {
					for range 50 {
						if cl.Do(); cl.Status() != http.StatusOK || (cl.Body() != upAddrA && cl.Body() != upAddrB) {
							bad <- cl.Body()
						}
						time.Sleep(time.Millisecond)
					}
				})
			}
			for range 3 {
				wg.Go(func() {
					time.Sleep(20 * time.Millisecond)
					if err := p.Close(); err != nil {
						bad <- "Close: " + err.Error()
					}
				})
			}
			wg.Wait()
			close(bad)
			for b := range bad {
				t.Errorf("during Close: %q", b)
			}
			if st := p.Status(); st.Admitted != 8*50 {
				t.Fatalf("admitted %d, want %d", st.Admitted, 8*50)
			}
		})
	})

	// The default answer when nothing is pickable, both headers included, allocates nothing.
	t.Run("RejectAllocatesNothing", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			ap, _ := rejectingApp(t, n, testConfig(upDead))
			cl := ap.Call("/")
			cl.Do() // the app's first request warms its pools
			// Under the race detector sync.Pool drops a quarter of what is put back, so the app rebuilds a pooled
			// request context about one request in four: 0.75 allocations a request on average for Fiber, 0.25 for
			// net/http. AllocsPerRun rounds the mean down, so it reads 0 only if the path allocates nothing
			// else; over 1,000 runs that mean is 0.75 ± 0.04, where 100 runs let it reach 1 by chance.
			if allocs := testing.AllocsPerRun(1000, cl.Do); allocs != 0 {
				t.Fatalf("%v allocations per rejected request, want 0", allocs)
			}
			if retry, _ := cl.Header("Retry-After"); retry != "1" || cl.Status() != http.StatusServiceUnavailable {
				t.Fatalf("answer %d with Retry-After %q, want 503 with 1", cl.Status(), retry)
			}
		})
	})
}

// upPickerOn creates a Picker by newPicker over cfg on n, closed when the bubble ends.
func upPickerOn[C any, H ~func(C) error, P io.Closer](n *memnet.Net, cfg upcore.Config[C, H], newPicker func(...upcore.Config[C, H]) P) P {
	cfg.Dial = n.Dial
	p := newPicker(cfg)
	n.Own(p)
	return p
}

// upUsing is ap using h, then the handlers of more.
func upUsing[C any, H ~func(C) error, A app[C, H]](ap A, h H) A {
	ap.Use(h)
	return ap
}

// upServeEchoes serves upAddrA (named a, 1 ms away) and upAddrB (b, 2 ms away: the same tier), each answering
// with its name and the request's URI.
func upServeEchoes(n *memnet.Net) {
	for _, u := range []struct {
		addr, name string
		rtt        time.Duration
	}{{upAddrA, "a", time.Millisecond}, {upAddrB, "b", 2 * time.Millisecond}} {
		n.Serve(u.addr, u.rtt, func(c *fasthttp.RequestCtx) { c.SetBodyString(u.name + " " + string(c.RequestURI())) })
	}
}

// upGet serves GET path by ap in memory and returns the status and body.
func upGet[C any, H ~func(C) error](ap app[C, H], path string) (int, string) {
	cl := ap.Call(path)
	cl.Do()
	return cl.Status(), cl.Body()
}

// upTestConfig is a fast-cycling config with metrics on a private registry; idleClients is the version's
// ConfigureClient shortening the life of an idle upstream connection.
func upTestConfig[C any, H ~func(C) error](idleClients any, servers ...string) upcore.Config[C, H] {
	return upcore.Config[C, H]{
		Servers:         servers,
		HealthInterval:  50 * time.Millisecond,
		HealthTimeout:   25 * time.Millisecond,
		Timeout:         5 * time.Second,
		Registerer:      prometheus.NewRegistry(),
		ConfigureClient: idleClients,
	}
}

// upstreampickFasthttpSuite is what only the Fiber adapters have: the fasthttp Picker's LBClient and
// BalancingClient behind the version's proxy.Balancer, and Reject answering proxy.Balancer's ErrNoUpstream.
func upstreampickFasthttpSuite[C upfast.Ctx, H ~func(C) error](t *testing.T, fv version[C, H], a upstreampickFiber[C, H]) {
	testConfig := func(servers ...string) upcore.Config[C, H] { return upTestConfig[C, H](a.idleClients, servers...) }
	picker := func(n *memnet.Net, cfg upcore.Config[C, H]) *upfast.Picker[C, H] {
		return upPickerOn(n, cfg, a.NewFiberPicker)
	}
	handlerApp := func(h H) fiberApp[C, H] { return upUsing(fv.newFiberApp(), h) }

	t.Run("NoUpstreamFailsFast", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			p := picker(n, testConfig("10.0.0.8:80", upDead)) // nothing answers there
			memnet.Eventually(t, "both upstreams unhealthy", func() bool { return upAllUnhealthy(p.Status()) })

			for name, app := range map[string]fiberApp[C, H]{
				"proxy.Balancer": handlerApp(a.balancer(p.LBClient())),
				"Handler":        handlerApp(p.Handler()),
			} {
				start := time.Now()
				code, body := memnet.Get(app.Handler(), "/")
				if code != fiberv2.StatusServiceUnavailable || !strings.Contains(body, "no upstream available") {
					t.Fatalf("%s: status %d body %q, want 503 no upstream available", name, code, body)
				}
				if d := time.Since(start); d != 0 {
					t.Fatalf("%s: took %v, want an immediate answer", name, d)
				}
			}
			err := p.BalancingClient().DoDeadline(&fasthttp.Request{}, &fasthttp.Response{}, time.Now().Add(time.Second))
			if !errors.Is(err, a.ErrNoUpstream) {
				t.Fatalf("DoDeadline error %v, want ErrNoUpstream", err)
			}
			if st := p.Status(); st.Rejected != 3 || st.Admitted != 0 {
				t.Fatalf("admitted %d rejected %d, want 0 and 3 (Handler, LBClient, BalancingClient)", st.Admitted, st.Rejected)
			}
		})
	})

	// proxy.Balancer with the picker's LBClient forwards the request, path and query included, to both upstreams
	// of the nearest tier and answers with their responses.
	t.Run("ProxyBalancerProxies", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			upServeEchoes(n)
			p := picker(n, testConfig(upAddrA, upAddrB))
			memnet.Eventually(t, "both upstreams measured", func() bool { return upAllSampled(p.Status()) })
			h := a.balancerApp(p).Handler()
			seen := map[string]int{}
			for range 100 {
				code, body := memnet.Get(h, "/x?y=1")
				if code != fiberv2.StatusOK {
					t.Fatalf("status %d body %q", code, body)
				}
				seen[body]++
			}
			// 1 and 2 ms are one tier: both get traffic (each at least 20 of 100; p < 1e-9 to fail).
			if len(seen) != 2 || seen["a /x?y=1"] < 20 || seen["b /x?y=1"] < 20 {
				t.Fatalf("answers %v, want both upstreams' with the path and query", seen)
			}
			if st := p.Status(); st.Admitted != 100 || st.Rejected != 0 {
				t.Fatalf("admitted %d rejected %d, want 100 and 0", st.Admitted, st.Rejected)
			}
		})
	})

	// With every upstream down, proxy.Balancer's ErrNoUpstream goes to an ErrorHandler that calls Reject, which
	// answers as Handler does (both headers, OnReject) and counts the request once, though LBClient counted it
	// already. A request Reject sees first (after a Pick that found nothing) is counted once too.
	t.Run("RejectAnswersProxyBalancersErrNoUpstream", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			reg := prometheus.NewRegistry()
			cfg := testConfig("10.0.0.8:80", upDead) // nothing answers there
			cfg.Registerer, cfg.Name, cfg.RetryAfter = reg, "edge", 2*time.Second
			var seenRetry, seenBy []string
			cfg.OnReject = func(c C) error {
				seenRetry = append(seenRetry, fv.respHeader(c, fiberv2.HeaderRetryAfter))
				seenBy = append(seenBy, fv.respHeader(c, "Fiberguard-Rejected-By"))
				return a.ConfigDefault.get().OnReject(c)
			}
			p := picker(n, cfg)
			memnet.Eventually(t, "upstreams unhealthy", func() bool { return upAllUnhealthy(p.Status()) })
			balanced := a.balancerApp(p).Handler()
			own := fv.newFiberApp()
			own.Get("/own", func(c C) error {
				if _, ok := p.Pick(); !ok {
					return p.Reject(c)
				}
				return fv.send(c, fiberv2.StatusOK, "picked")
			})

			for i, tt := range []struct {
				app  fasthttp.RequestHandler
				path string
			}{{balanced, "/"}, {balanced, "/x"}, {own.Handler(), "/own"}} {
				path := tt.path
				resp := memnet.Call(tt.app, path)
				if resp.StatusCode() != fiberv2.StatusServiceUnavailable || string(resp.Body()) != "upstreampick: no upstream available\n" {
					t.Fatalf("%s: status %d body %q, want the default OnReject", path, resp.StatusCode(), resp.Body())
				}
				if got := string(resp.Header.Peek(fiberv2.HeaderRetryAfter)); got != "2" {
					t.Fatalf("%s: Retry-After %q, want 2", path, got)
				}
				if got := string(resp.Header.Peek("Fiberguard-Rejected-By")); got != "upstreampick/edge" {
					t.Fatalf("%s: Fiberguard-Rejected-By %q, want upstreampick/edge", path, got)
				}
				if len(seenBy) != i+1 || seenRetry[i] != "2" || seenBy[i] != "upstreampick/edge" {
					t.Fatalf("%s: OnReject calls saw Retry-After %q and Fiberguard-Rejected-By %q, want one more with 2 and upstreampick/edge",
						path, seenRetry, seenBy)
				}
				if st := p.Status(); st.Rejected != uint64(i+1) || st.Admitted != 0 {
					t.Fatalf("%s: rejected %d admitted %d, want %d and 0: each request counted once", path, st.Rejected, st.Admitted, i+1)
				}
				if err := testutil.GatherAndCompare(reg, strings.NewReader(upRequestsMetric(0, i+1)), "fiberguard_upstreampick_requests_total"); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			}
		})
	})

	// Config.Discover and Config.Resolver reach the core. proxy.Balancer sends to the addresses a name resolves
	// to, beside a static server; an address added to the answer takes traffic, one removed from it stops getting
	// any; Status shows the name; SetServers(nil) keeps the discovered ones.
	t.Run("DiscoverThroughProxyBalancer", func(t *testing.T) {
		memnet.Bubble(t, func(t *testing.T, n *memnet.Net) {
			const every = time.Second
			for _, addr := range []string{upAddrA, "10.0.1.1:8080", "10.0.1.2:8080"} {
				n.Serve(addr, time.Millisecond, nil)
			}
			dns := memnet.NewDNS()
			dns.SetHost("api.test", "10.0.1.1")
			cfg := testConfig(upAddrA)
			cfg.Discover, cfg.Resolver = []upcore.Discovery{upcore.DNS("http://api.test:8080", every)}, dns
			p := picker(n, cfg)
			h := a.balancerApp(p).Handler()
			answers := func() map[string]int {
				seen := map[string]int{}
				for range 60 {
					code, body := memnet.Get(h, "/")
					if code != fiberv2.StatusOK {
						t.Fatalf("status %d body %q", code, body)
					}
					seen[body]++
				}
				return seen
			}
			if seen := answers(); len(seen) != 2 || seen[upAddrA] == 0 || seen["10.0.1.1:8080"] == 0 {
				t.Fatalf("answers %v, want the static server and the discovered one", seen)
			}

			dns.SetHost("api.test", "10.0.1.2")
			time.Sleep(every)
			synctest.Wait()
			if seen := answers(); seen["10.0.1.2:8080"] == 0 {
				t.Fatalf("answers %v, want the added address used", seen)
			}
			time.Sleep(2 * every) // the third answer without 10.0.1.1
			synctest.Wait()
			if seen := answers(); seen["10.0.1.1:8080"] != 0 || seen["10.0.1.2:8080"] == 0 {
				t.Fatalf("answers %v, want the removed address unused", seen)
			}

			d := p.Status().Discovery
			if len(d) != 1 || d[0].Target != "http://api.test:8080" || !slices.Equal(d[0].Addresses, []string{"http://10.0.1.2:8080"}) {
				t.Fatalf("Status().Discovery %+v", d)
			}
			if err := p.SetServers(nil); err != nil {
				t.Fatalf("SetServers(nil) with Discover: %v", err)
			}
			if seen := answers(); len(seen) != 1 || seen["10.0.1.2:8080"] != 60 {
				t.Fatalf("answers %v after SetServers(nil), want the discovered address alone", seen)
			}
		})
	})
}

func upAllSampled(st upcore.Status) bool {
	for _, u := range st.Upstreams {
		if !u.Sampled && u.Healthy {
			return false
		}
	}
	return true
}

func upAllUnhealthy(st upcore.Status) bool {
	for _, u := range st.Upstreams {
		if u.Healthy {
			return false
		}
	}
	return true
}

// upRequestsMetric is requests_total of a Picker named edge, in the text format.
func upRequestsMetric(admitted, rejected int) string {
	return fmt.Sprintf(`# HELP fiberguard_upstreampick_requests_total Requests that got an upstream (decision="admitted") or found none (decision="rejected").
# TYPE fiberguard_upstreampick_requests_total counter
fiberguard_upstreampick_requests_total{decision="admitted",name="edge"} %d
fiberguard_upstreampick_requests_total{decision="rejected",name="edge"} %d
`, admitted, rejected)
}

// BenchmarkUpstreampickReject drives each version's app when no upstream can take the request: the default
// OnReject with both headers, beside the floor of any middleware (pass-through: a middleware that only calls
// Next, in front of the default OnReject as the app's handler, so it writes the same answer but for the two
// headers).
func BenchmarkUpstreampickReject(b *testing.B) {
	b.Run("fiber-v2", func(b *testing.B) { upstreampickRejectBench(b, v2, upstreampickV2) })
	b.Run("fiber-v3", func(b *testing.B) { upstreampickRejectBench(b, v3, upstreampickV3) })
}

func upstreampickRejectBench[C upfast.Ctx, H ~func(C) error](b *testing.B, fv version[C, H], a upstreampickFiber[C, H]) {
	b.Run("pass-through", func(b *testing.B) {
		app := fv.newFiberApp()
		app.Use(func(c C) error { return fv.next(c) })
		app.Use(a.ConfigDefault.get().OnReject)
		upServeLoop(b, app.Handler())
	})
	b.Run("reject", func(b *testing.B) {
		p := a.NewPicker(upcore.Config[C, H]{
			Servers:        []string{upDead},
			HealthInterval: 10 * time.Millisecond,
			Dial:           memnet.Refuse,
			Registerer:     prometheus.NewRegistry(),
		})
		defer func() { _ = p.Close() }()
		for deadline := time.Now().Add(10 * time.Second); !upAllUnhealthy(p.Status()); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the upstream did not become unhealthy")
			}
		}
		app := fv.newFiberApp()
		app.Use(p.Handler())
		upServeLoop(b, app.Handler())
	})
}

// upServeLoop drives h with one GET / on a RequestCtx of its own, as a server would, and checks for a 503.
func upServeLoop(b *testing.B, h fasthttp.RequestHandler) {
	var c fasthttp.RequestCtx
	c.Request.Header.SetMethod(fasthttp.MethodGet)
	c.Request.SetRequestURI("/")
	b.ReportAllocs()
	for b.Loop() {
		h(&c)
		if c.Response.StatusCode() != fasthttp.StatusServiceUnavailable {
			b.Fatalf("status %d", c.Response.StatusCode())
		}
		c.Response.Reset()
	}
}
