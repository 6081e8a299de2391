// Package demo holds what the example apps share: running until the process is told to stop, and the local
// upstream servers they proxy to.
package demo

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	throttlecore "github.com/fiberguard/fiberguard/throttle/core"

	"github.com/valyala/fasthttp"
)

// Main runs run with the process's environment and log until SIGINT or SIGTERM ends its context, and exits
// non-zero with run's error.
func Main(run func(ctx context.Context, getenv func(string) string, logger *log.Logger) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, log.Default())
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

// Upstream serves "<name> <method> <path>" on a random 127.0.0.1 port, the path with prefix trimmed. shutdown
// stops it and waits until it has.
func Upstream(name, prefix string) (addr string, shutdown func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &fasthttp.Server{
		Handler: func(c *fasthttp.RequestCtx) {
			c.SetContentType("text/plain; charset=utf-8")
			path := string(c.Path())
			if len(path) >= len(prefix) && path[:len(prefix)] == prefix {
				path = path[len(prefix):]
			}
			fmt.Fprintf(c, "%s %s %s\n", name, c.Method(), path)
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

// Listen listens on FIBERGUARD_ADDR (def when it is unset) over network ("tcp", "tcp4" ...), and says which
// addresses it takes when that fails.
func Listen(getenv func(string) string, network, def string) (net.Listener, error) {
	addr := getenv("FIBERGUARD_ADDR")
	if addr == "" {
		addr = def
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("%w (FIBERGUARD_ADDR must be a free host:port of this machine, IPv4 or IPv6: "+
			"127.0.0.1:8080, [::1]:8080, :8080 for every address)", err)
	}
	return ln, nil
}

// Serve listens on FIBERGUARD_ADDR (def when unset), says where and which routes, and runs serve on the listener until ctx ends,
// when it calls shutdown; serve's error is returned, nil after a shutdown.
func Serve(ctx context.Context, getenv func(string) string, logger *log.Logger, what, routes, def string,
	serve func(net.Listener) error, shutdown func()) error {
	ln, err := Listen(getenv, "tcp4", def)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	logger.Printf("%s on http://%s (%s)", what, ln.Addr(), routes)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown()
	}()
	err = serve(ln)
	if ctx.Err() != nil {
		<-stopped
	}
	return err
}

// WorkTrigger is the examples' throttle trigger: it fires while more than 4 requests are in the work route,
// counted by inWork, evaluated every 250 ms.
func WorkTrigger(inWork *atomic.Int64) []throttlecore.Trigger {
	return []throttlecore.Trigger{{
		Name: "work_queue", Interval: 250 * time.Millisecond,
		Func: func(context.Context) (bool, error) { return inWork.Load() > 4, nil },
	}}
}
