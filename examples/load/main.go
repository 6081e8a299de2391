// Command load drives the demo gateway past its capacity, open loop: each route gets requests at a fixed rate
// whatever the answers' latency, for a bounded time. Each second it shows what came back, with rejections
// split by the fiberguard module that made them; at the end, a summary of the whole run.
//
//	go run ./examples/gateway    # in one terminal
//	go run ./examples/load       # in another: the default mix for 20 s
//	go run ./examples/load -duration 60s -r '800:/burn?ms=5' -r 50:/proxy/hello
//
// Run it with -h for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Exit statuses.
const (
	exitOK          = 0
	exitUnreachable = 1
	exitUsage       = 2
	exitInterrupted = 130 // as a shell reports a command ended by Ctrl-C
)

// probeTimeout bounds the check that the server answers at all, before any load.
const probeTimeout = 2 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C the run stops sending and waits for its answers; a second one ends it at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, isTerminal(os.Stdout))
	stop()
	os.Exit(code)
}

// isTerminal tells a terminal (redraw a table) from a file or a pipe (print lines).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// run is the command: it returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, terminal bool) int {
	cfg, err := parseArgs(args, getenv, runtime.NumCPU(), stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "run with -h for usage")
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "load: %v\nrun with -h for usage\n", err)
		return exitUsage
	}

	client := newHTTPDoer(cfg.target, cfg.inflight, cfg.timeout)
	defer client.close()
	if err := probe(cfg, client); err != nil {
		fmt.Fprintf(stderr, "load: cannot reach %s (%s)\nIs the gateway running? Start it with: go run ./examples/gateway\n"+
			"(or point -target at the server you want to load)\n", cfg.target, errorText(err))
		return exitUnreachable
	}

	routes := make([]string, len(cfg.routes))
	for i, r := range cfg.routes {
		routes[i] = formatRate(r.rate) + "/s " + r.path
	}
	fmt.Fprintf(stdout, "load: %s for %s: %s (timeout %s, at most %d in flight)\n", cfg.target,
		formatSpan(cfg.duration), strings.Join(routes, ", "), cfg.timeout, cfg.inflight)

	d := newDriver(cfg.routes, cfg.inflight, client)
	start := time.Now()
	rep := newReporter(stdout, terminal && !cfg.plain, cfg, d, start)
	sending, interrupted := drive(ctx, d, rep, cfg.duration, start, time.Second, stderr)
	rep.summary(sending, time.Since(start), interrupted)
	if interrupted {
		return exitInterrupted
	}
	return exitOK
}

// probe sends one request to the server's root: any answer, whatever its status, shows it is there.
func probe(cfg config, client *httpDoer) error {
	p := *client
	p.timeout = min(cfg.timeout, probeTimeout)
	return p.do("/").err
}

// drive runs d from start for duration and reports every interval until every answer is in. It returns how
// long requests were sent and whether ctx stopped them early.
func drive(ctx context.Context, d *driver, rep *reporter, duration time.Duration, start time.Time,
	interval time.Duration, stderr io.Writer) (sending time.Duration, interrupted bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(ctx, start, duration)
	}()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	stopped := ctx.Done()
	sending = duration
	for {
		select {
		case <-stopped:
			stopped = nil
			sending, interrupted = min(time.Since(start), duration), true
			if n := d.inflight(); n > 0 {
				fmt.Fprintf(stderr, "\nload: interrupted; waiting for %d answers (Ctrl-C again to quit at once)\n", n)
			}
		case now := <-ticker.C:
			// Once sending is over, a tick while answers are still due is often followed at once by the last
			// answer: two sets of lines for one instant, the second nearly empty. Such a tick waits for them, one
			// interval at most.
			over := interrupted || now.Sub(start) >= duration
			if over && d.inflight() > 0 && now.Sub(rep.last) < interval*3/2 {
				continue
			}
			rep.tick(now, interrupted)
		case <-done:
			if stopped != nil && ctx.Err() != nil { // ctx ended as the last answer came in
				sending, interrupted = min(time.Since(start), duration), true
			}
			rep.final(time.Now(), interrupted)
			return sending, interrupted
		}
	}
}
