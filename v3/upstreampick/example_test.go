package upstreampick_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fiberguard/fiberguard/v3/upstreampick"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Plug the picker into proxy.Balancer through its Client (see ExamplePicker_LBClient for the answer when no
// upstream is available).
func Example() {
	picker := upstreampick.NewPicker(upstreampick.Config{
		Servers: []string{"http://10.0.1.10:8080", "http://10.0.1.11:8080", "http://10.8.0.10:8080"},
	})
	defer func() { _ = picker.Close() }()

	app := fiber.New()
	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))
	app.Get("/status", func(c fiber.Ctx) error { return c.JSON(picker.Status()) })
	_ = app // app.Listen(":3000")
}

// The middleware alone, stopped with the server's context.
func ExampleNew() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop() // stops the health checks

	app := fiber.New()
	app.All("/api/*", upstreampick.New(upstreampick.Config{
		Servers: []string{"http://10.0.1.10:8080", "http://10.0.1.11:8080"},
		Context: ctx,
	}))
	_ = app // app.Listen(":3000")
}

// The handler, a status view, and the rejection when nothing is pickable.
func ExamplePicker_Handler() {
	// An upstream on 127.0.0.1.
	ln, _ := net.Listen("tcp4", "127.0.0.1:0")
	upstream := &fasthttp.Server{
		Handler:               func(c *fasthttp.RequestCtx) { c.SetBodyString("hello from upstream") },
		MaxIdleWorkerDuration: 100 * time.Millisecond,
	}
	go func() { _ = upstream.Serve(ln) }()
	defer func() { _ = upstream.Shutdown() }()

	picker := upstreampick.NewPicker(upstreampick.Config{
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

	// The upstream goes away for good: two failed connections later, requests are rejected at once.
	_ = upstream.Shutdown()
	for picker.Status().Upstreams[0].Healthy {
		time.Sleep(10 * time.Millisecond)
	}
	resp, _ = app.Test(httptest.NewRequest("GET", "/api/greeting", nil))
	body, _ = io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Fiberguard-Rejected-By"))
	fmt.Print(string(body))
	fmt.Println("rejected:", picker.Status().Rejected)
	// Output:
	// 200 hello from upstream
	// tier 0, healthy true, picks 1
	// 503 1 upstreampick/default
	// upstreampick: no upstream available
	// rejected: 1
}

// Through proxy.Balancer, the ErrorHandler answers ErrNoUpstream with Reject, as Handler would.
func ExamplePicker_LBClient() {
	picker := upstreampick.NewPicker(upstreampick.Config{
		Servers:        []string{"10.0.1.10:8080"},
		HealthInterval: 20 * time.Millisecond,
		// Every connection is refused.
		Dial:       func(context.Context, string) (net.Conn, error) { return nil, syscall.ECONNREFUSED },
		Name:       "api",
		Registerer: prometheus.NewRegistry(),
	})
	defer func() { _ = picker.Close() }()
	for picker.Status().Upstreams[0].Healthy {
		time.Sleep(5 * time.Millisecond)
	}

	app := fiber.New(fiber.Config{ErrorHandler: func(c fiber.Ctx, err error) error {
		if errors.Is(err, upstreampick.ErrNoUpstream) {
			return picker.Reject(c)
		}
		return fiber.DefaultErrorHandler(c, err)
	}})
	app.Use(proxy.Balancer(proxy.Config{Client: picker.LBClient()}))

	resp, _ := app.Test(httptest.NewRequest("GET", "/", nil))
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Fiberguard-Rejected-By"))
	fmt.Print(string(body))
	fmt.Println("rejected:", picker.Status().Rejected)
	// Output:
	// 503 1 upstreampick/api
	// upstreampick: no upstream available
	// rejected: 1
}
