package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"

	"github.com/fiberguard/fiberguard/examples/internal/demo"

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
// its name and the path it was asked for. Two are near (site-a, site-b); the gateway reaches the third
// (site-c) through a dial that waits farDelay first, as if it were in another region, so that the demo shows
// tiers: site-c is measured about 20 ms away, sits in a tier of its own and gets no traffic while a near one is
// healthy.
//
// With servers given, the gateway dials each once at start and warns when none answers: every /proxy request
// would be a 503 until one does.
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
		// far is the demo upstream reached through a delayed dial.
		far string
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
			addr, shutdown, err := demo.Upstream(name, "")
			if err != nil {
				stop()
				return nil, nil, err
			}
			stops = append(stops, shutdown)
			servers = append(servers, "http://"+addr)
			if name == farUpstream {
				far = addr
			}
		}
	}

	// New panics on an invalid server list (Fiber's convention); the gateway reports it as a setup error.
	picker, err := newPicker(upstreampick.Config{
		Servers:    servers,
		Mode:       mode,
		Timeout:    5 * time.Second,
		Registerer: e.registry,
		Dial:       farDial(far),
		ConfigureClient: func(_ string, c *fasthttp.HostClient) {
			c.MaxIdleConnDuration = idle
		},
	})
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, func() { _ = picker.Close() })
	if far == "" {
		warnUnreachable(e, servers)
	}

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

// farUpstream is the demo upstream behind a delayed dial; farDelay the delay: about a round trip to a
// neighbouring region.
const (
	farUpstream = "site-c"
	farDelay    = 20 * time.Millisecond
)

// farDial returns a Config.Dial that waits farDelay before dialing far ("host:port"), and dials every other
// address at once; with no far address, nil (the default dialer).
func farDial(far string) func(ctx context.Context, addr string) (net.Conn, error) {
	if far == "" {
		return nil
	}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		if addr == far {
			t := time.NewTimer(farDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// reachTimeout bounds the start-up dial of each configured upstream.
const reachTimeout = 2 * time.Second

// warnUnreachable dials every server once, side by side, and warns when none of them accepts a connection.
func warnUnreachable(e env, servers []string) {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { errs[i] = reach(s) })
	}
	wg.Wait()
	var why []string
	for i, err := range errs {
		if err == nil {
			return
		}
		why = append(why, servers[i]+": "+err.Error())
	}
	e.printf("upstreampick: WARNING: no upstream of FIBERGUARD_UPSTREAMPICK_SERVERS accepts a connection (%s); "+
		"every /proxy/ request is answered 503 until one does", strings.Join(why, "; "))
}

// reach opens and closes one TCP connection to server's host and port (80 or 443 by its scheme when it has
// none).
func reach(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "443", false: "80"}[u.Scheme == "https"]
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(u.Hostname(), port), reachTimeout)
	if err != nil {
		return err
	}
	return c.Close()
}

func newPicker(cfg upstreampick.Config) (p *upstreampick.Picker, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return upstreampick.NewPicker(cfg), nil
}

func upstreampickMode(s string) (upstreampickcore.Mode, error) {
	for _, m := range []upstreampickcore.Mode{upstreampickcore.ModeLatency, upstreampickcore.ModeLeastPending, upstreampickcore.ModeRandom} {
		if s == m.String() {
			return m, nil
		}
	}
	if s == "" {
		return upstreampickcore.ModeLatency, nil
	}
	return 0, errors.New("FIBERGUARD_UPSTREAMPICK_MODE must be latency, least-pending or random")
}
