package upstreampick_test

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Plug the picker into proxy.Balancer through its Client.
func Example() {
	picker := upstreampick.New(upstreampick.Config{
		Servers: []string{"http://10.0.1.10:8080", "http://10.0.1.11:8080", "http://10.8.0.10:8080"},
	})
	defer func() { _ = picker.Close() }()

	app := fiber.New()
	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))
	app.Get("/status", func(c *fiber.Ctx) error { return c.JSON(picker.Status()) })
	_ = app // app.Listen(":3000")
}

// The convenience handler, a status snapshot, and the 503 when nothing is pickable.
func ExamplePicker_Handler() {
	// An upstream on 127.0.0.1.
	ln, _ := net.Listen("tcp4", "127.0.0.1:0")
	upstream := &fasthttp.Server{
		Handler:               func(c *fasthttp.RequestCtx) { c.SetBodyString("hello from upstream") },
		MaxIdleWorkerDuration: 100 * time.Millisecond,
	}
	go func() { _ = upstream.Serve(ln) }()
	defer func() { _ = upstream.Shutdown() }()

	picker := upstreampick.New(upstreampick.Config{
		Servers:        []string{ln.Addr().String()},
		HealthInterval: 100 * time.Millisecond,
		Registerer:     prometheus.NewRegistry(),
	})
	defer func() { _ = picker.Close() }()

	app := fiber.New()
	app.Get("/api/*", picker.Handler())

	resp, _ := app.Test(httptest.NewRequest("GET", "/api/greeting", nil))
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))

	for !picker.Status().Upstreams[0].Sampled {
		time.Sleep(10 * time.Millisecond)
	}
	st := picker.Status().Upstreams[0]
	fmt.Printf("tier %d, healthy %v, picks %d\n", st.Tier, st.Healthy, st.Picks)

	// The upstream goes away for good: two failed connections later, requests fail fast with 503.
	_ = upstream.Shutdown()
	for picker.Status().Upstreams[0].Healthy {
		time.Sleep(10 * time.Millisecond)
	}
	resp, _ = app.Test(httptest.NewRequest("GET", "/api/greeting", nil))
	body, _ = io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 hello from upstream
	// tier 0, healthy true, picks 1
	// 503 upstreampick: no upstream available
}
