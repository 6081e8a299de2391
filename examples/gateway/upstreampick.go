package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/valyala/fasthttp"
)

// setupUpstreampick installs the upstreampick feature: GET/POST/... /proxy/* goes through proxy.Balancer to the
// nearest healthy upstream; /status shows each upstream's connect time, tier, health and picks.
//
//	FIBERGUARD_UPSTREAMPICK_SERVERS=http://10.0.1.10:8080,http://10.8.0.10:8080   real upstreams
//	FIBERGUARD_UPSTREAMPICK_MODE=latency|least-pending|random                     (default latency)
//
// Without servers, three demo upstreams are started in-process on 127.0.0.1 (random ports); each answers with
// its name and the path it was asked for.
func setupUpstreampick(app *fiber.App, e env) (func() any, func(), error) {
	mode, err := upstreampickMode(e.getenv("FIBERGUARD_UPSTREAMPICK_MODE"))
	if err != nil {
		return nil, nil, err
	}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}

	var (
		servers []string
		// Demo upstreams are in-process: reconnecting costs microseconds, and short idle times let Close leave
		// no fasthttp cleaner goroutine behind for long.
		idle = 10 * time.Second
	)
	if list := e.getenv("FIBERGUARD_UPSTREAMPICK_SERVERS"); list != "" {
		for _, s := range strings.Split(list, ",") {
			if s = strings.TrimSpace(s); s != "" {
				servers = append(servers, s)
			}
		}
	} else {
		idle = 100 * time.Millisecond
		for _, name := range []string{"site-a", "site-b", "site-c"} {
			addr, shutdown, err := startDemoUpstream(name)
			if err != nil {
				stop()
				return nil, nil, err
			}
			stops = append(stops, shutdown)
			servers = append(servers, "http://"+addr)
		}
	}

	// New panics on an invalid server list (Fiber's convention); the gateway reports it as a setup error.
	picker, err := newPicker(upstreampick.Config{
		Servers:    servers,
		Mode:       mode,
		Timeout:    5 * time.Second,
		Registerer: e.registry,
		ConfigureClient: func(_ string, c *fasthttp.HostClient) {
			c.MaxIdleConnDuration = idle
		},
	})
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, func() { _ = picker.Close() })

	balancer := proxy.Balancer(proxy.Config{Client: picker.LBClient()})
	app.All("/proxy/*", func(c *fiber.Ctx) error {
		// With no upstream to take it, the request is answered as upstreampick's own Handler answers it:
		// 503, Retry-After and Fiberguard-Rejected-By, counted in /status.
		err := balancer(c)
		if errors.Is(err, upstreampick.ErrNoUpstream) {
			return picker.Reject(c)
		}
		// An upstream that could not be reached, or broke off, is a gateway's 502, not a 500.
		var fe *fiber.Error
		if err != nil && !errors.As(err, &fe) {
			return fiber.NewError(fiber.StatusBadGateway, err.Error())
		}
		return err
	})
	return func() any { return picker.Status() }, stop, nil
}

func newPicker(cfg upstreampick.Config) (p *upstreampick.Picker, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return upstreampick.NewPicker(cfg), nil
}

func upstreampickMode(s string) (upstreampick.Mode, error) {
	for _, m := range []upstreampick.Mode{upstreampick.ModeLatency, upstreampick.ModeLeastPending, upstreampick.ModeRandom} {
		if s == m.String() {
			return m, nil
		}
	}
	if s == "" {
		return upstreampick.ModeLatency, nil
	}
	return 0, errors.New("FIBERGUARD_UPSTREAMPICK_MODE must be latency, least-pending or random")
}

// startDemoUpstream serves "<name> <method> <path>" on a random 127.0.0.1 port.
func startDemoUpstream(name string) (addr string, shutdown func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &fasthttp.Server{
		Handler: func(c *fasthttp.RequestCtx) {
			c.SetContentType("text/plain; charset=utf-8")
			fmt.Fprintf(c, "%s %s %s\n", name, c.Method(), c.Path())
		},
		MaxIdleWorkerDuration: 100 * time.Millisecond,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.ShutdownWithContext(ctx)
		// A shutdown before Serve has taken ln finds nothing to stop; closing ln ends Serve either way.
		_ = ln.Close()
		<-served
	}, nil
}
