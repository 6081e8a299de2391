package bench

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"

	"github.com/fiberguard/fiberguard/upstreampick"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// upstreams starts n HTTP servers on 127.0.0.1 answering "ok" and returns their addresses.
func upstreams(b *testing.B, n int) []string {
	b.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &fasthttp.Server{
			Handler:               func(c *fasthttp.RequestCtx) { c.SetBodyString("ok") },
			MaxIdleWorkerDuration: 100 * time.Millisecond,
		}
		go func() { _ = srv.Serve(ln) }()
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.ShutdownWithContext(ctx)
		})
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// measuredPicker returns a Picker over addrs whose first health round is done (every upstream in a tier).
func measuredPicker(b *testing.B, addrs []string, mode upstreampickcore.Mode) *upstreampick.Picker {
	b.Helper()
	p := upstreampick.NewPicker(upstreampick.Config{
		Servers:    addrs,
		Mode:       mode,
		Registerer: prometheus.NewRegistry(),
	})
	b.Cleanup(func() { _ = p.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		measured := true
		for _, u := range p.Status().Upstreams {
			measured = measured && u.Sampled
		}
		if measured {
			return p
		}
		if time.Now().After(deadline) {
			b.Fatalf("no first health round within 10 s: %+v", p.Status())
		}
	}
}

// noopClient is a fasthttp.BalancingClient that answers at once, so an LBClient around it costs its selection.
type noopClient struct{ pending atomic.Int32 }

func (c *noopClient) DoDeadline(*fasthttp.Request, *fasthttp.Response, time.Time) error { return nil }
func (c *noopClient) PendingRequests() int                                              { return int(c.pending.Load()) }

// BenchmarkUpstreamPickSelect compares choosing an upstream: upstreampick's Pick (one atomic load, a random
// index) against fasthttp.LBClient's least-loaded scan, driven through LBClient.DoDeadline over clients that
// return at once (its selection is not exported; the wrapper adds an atomic increment and a call).
func BenchmarkUpstreamPickSelect(b *testing.B) {
	for _, n := range []int{3, 64} {
		addrs := upstreams(b, n)
		for _, mode := range []upstreampickcore.Mode{upstreampickcore.ModeLatency, upstreampickcore.ModeLeastPending, upstreampickcore.ModeRandom} {
			b.Run(fmt.Sprintf("upstreampick-%v/%d", mode, n), func(b *testing.B) {
				p := measuredPicker(b, addrs, mode)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, ok := p.Pick(); !ok {
						b.Fatal("nothing pickable")
					}
				}
			})
		}
		b.Run(fmt.Sprintf("lbclient/%d", n), func(b *testing.B) {
			lbc := &fasthttp.LBClient{}
			for range n {
				lbc.Clients = append(lbc.Clients, &noopClient{})
			}
			deadline := time.Now().Add(time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := lbc.DoDeadline(nil, nil, deadline); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// proxyApp returns the handler of a Fiber app that proxies every request with proxy.Balancer.
func proxyApp(cfg proxy.Config) fasthttp.RequestHandler {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(proxy.Balancer(cfg))
	return app.Handler()
}

// drive sends n proxied requests through h from par goroutines, each with its own RequestCtx, and fails b
// on any non-200 answer.
func drive(b *testing.B, h fasthttp.RequestHandler, n, par int) {
	var (
		wg   sync.WaitGroup
		left atomic.Int64
		bad  atomic.Int64
	)
	left.Store(int64(n))
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := &fasthttp.RequestCtx{}
			ctx.Request.Header.SetMethod(fiber.MethodGet)
			for left.Add(-1) >= 0 {
				ctx.Request.SetRequestURI("/item")
				ctx.Request.Header.SetHost("gateway")
				h(ctx)
				if ctx.Response.StatusCode() != fiber.StatusOK {
					bad.Add(1)
				}
				ctx.Response.Reset()
			}
		}()
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d proxied requests failed", n)
	}
}

// BenchmarkUpstreamPickProxy measures proxied loopback throughput through proxy.Balancer with its default
// client (fasthttp.LBClient over HostClients) and with upstreampick's client, over the same three upstreams,
// in one run. Each op is one proxied request; 8 requests are in flight at a time.
func BenchmarkUpstreamPickProxy(b *testing.B) {
	addrs := upstreams(b, 3)
	const par = 8
	b.Run("default", func(b *testing.B) {
		h := proxyApp(proxy.Config{Servers: addrs})
		drive(b, h, 100, par) // warm the connection pools
		b.ReportAllocs()
		b.ResetTimer()
		drive(b, h, b.N, par)
	})
	b.Run("upstreampick", func(b *testing.B) {
		p := measuredPicker(b, addrs, upstreampickcore.ModeLatency)
		h := proxyApp(proxy.Config{Client: p.LBClient()})
		drive(b, h, 100, par)
		b.ReportAllocs()
		b.ResetTimer()
		drive(b, h, b.N, par)
	})
}

// BenchmarkUpstreamPickProxyRatio alternates rounds of proxy.Balancer with its default client and with
// upstreampick's, over the same three upstreams, so a noisy machine disturbs both alike, and reports
// upstreampick's throughput over the default's (ratio; >= 1 means upstreampick is at least as fast), with 8
// requests in flight and with 1 (where how the load is spread cannot matter, so the ratio is the picker's own
// cost). The "default" cases pit the default client against a second one of its own: the noise floor.
func BenchmarkUpstreamPickProxyRatio(b *testing.B) {
	addrs := upstreams(b, 3)
	candidates := []struct {
		name string
		mode upstreampickcore.Mode
	}{{"latency", upstreampickcore.ModeLatency}, {"least-pending", upstreampickcore.ModeLeastPending}, {"default", -1}}
	for _, par := range []int{8, 1} {
		for _, c := range candidates {
			b.Run(fmt.Sprintf("%s/inflight=%d", c.name, par), func(b *testing.B) {
				def := proxyApp(proxy.Config{Servers: addrs})
				var other fasthttp.RequestHandler
				if c.mode < 0 {
					other = proxyApp(proxy.Config{Servers: addrs})
				} else {
					other = proxyApp(proxy.Config{Client: measuredPicker(b, addrs, c.mode).LBClient()})
				}
				ratio(b, def, other, par)
			})
		}
	}
}

// ratio runs b.N rounds of each handler with par requests in flight, alternating which goes first, and
// reports base's time over other's.
func ratio(b *testing.B, base, other fasthttp.RequestHandler, par int) {
	const round = 1000
	drive(b, base, 200, par)
	drive(b, other, 200, par)
	var tBase, tOther time.Duration
	b.ResetTimer()
	for i := range b.N {
		first, second := &tBase, &tOther
		h1, h2 := base, other
		if i%2 == 1 {
			first, second, h1, h2 = &tOther, &tBase, other, base
		}
		start := time.Now()
		drive(b, h1, round, par)
		*first += time.Since(start)
		start = time.Now()
		drive(b, h2, round, par)
		*second += time.Since(start)
	}
	b.ReportMetric(float64(tBase)/float64(tOther), "ratio")
	b.ReportMetric(float64(round*b.N)/tOther.Seconds(), "req/s")
}
