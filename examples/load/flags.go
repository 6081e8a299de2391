package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bounds of the flags: wide enough for any demo, narrow enough that a typo cannot start a run of days or a
// rate no machine can send.
const (
	maxRate     = 100_000
	maxDuration = 24 * time.Hour
	maxTimeout  = time.Minute
	maxInflight = 100_000
	maxPathLen  = 2048
)

const defaultTarget = "http://127.0.0.1:8080"

// route is a path requested at a fixed rate.
type route struct {
	path string
	rate float64 // requests per second, > 0
}

// config is a validated command line.
type config struct {
	target   *url.URL // http://host:port, nothing else
	routes   []route
	duration time.Duration
	timeout  time.Duration
	inflight int
	plain    bool
}

// errUsage is returned after the flag package's message has been written.
var errUsage = errors.New("invalid command line")

// defaultRoutes is the mix that shows the gateway's modules on a machine with cpus CPUs: /burn asks for 1.5
// times the CPU time there is (each request costs 5 ms, so cpus×200 per second fill the CPUs) and loadshed
// sheds; /throttled asks for 1.25 times what the 8-worker backend serves (8 × 1/20 ms = 400 per second) and the
// throttle window closes; /proxy goes through upstreampick to the two near demo upstreams (the far one gets none).
func defaultRoutes(cpus int) []route {
	return []route{
		{path: "/burn?ms=5", rate: float64(300 * max(cpus, 1))},
		{path: "/throttled?ms=20", rate: 500},
		{path: "/proxy/hello", rate: 100},
	}
}

// parseRoute reads RATE:PATH. The rate comes first because a path may itself hold ':', '?' and '='; everything
// after the first ':' is the path, as sent.
func parseRoute(s string) (route, error) {
	const want = "want RATE:PATH, such as 400:/burn?ms=5"
	rateText, path, ok := strings.Cut(s, ":")
	if !ok {
		return route{}, errors.New(want)
	}
	rate, err := strconv.ParseFloat(strings.TrimSpace(rateText), 64)
	switch {
	case err != nil:
		return route{}, fmt.Errorf("rate %q is not a number (%s)", rateText, want)
	case math.IsNaN(rate) || math.IsInf(rate, 0):
		return route{}, fmt.Errorf("rate %q must be a finite number of requests per second", rateText)
	case rate <= 0:
		return route{}, fmt.Errorf("rate %s must be above 0 requests per second", rateText)
	case rate > maxRate:
		return route{}, fmt.Errorf("rate %s must be at most %d requests per second", rateText, maxRate)
	}
	switch {
	case !strings.HasPrefix(path, "/"):
		return route{}, fmt.Errorf("path %q must start with / (%s; the server goes in -target)", path, want)
	case len(path) > maxPathLen:
		return route{}, fmt.Errorf("path must be at most %d bytes", maxPathLen)
	case strings.ContainsFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return route{}, fmt.Errorf("path %q must not contain spaces or control characters", path)
	}
	return route{path: path, rate: rate}, nil
}

// routesFlag collects repeated -r flags.
type routesFlag struct{ routes *[]route }

func (f routesFlag) String() string {
	if f.routes == nil {
		return ""
	}
	parts := make([]string, len(*f.routes))
	for i, r := range *f.routes {
		parts[i] = formatRate(r.rate) + ":" + r.path
	}
	return strings.Join(parts, " ")
}

func (f routesFlag) Set(s string) error {
	r, err := parseRoute(s)
	if err != nil {
		return err
	}
	for _, o := range *f.routes {
		if o.path == r.path {
			return fmt.Errorf("path %s is given twice (one -r per path)", r.path)
		}
	}
	*f.routes = append(*f.routes, r)
	return nil
}

// parseTarget accepts http://host:port (the port defaults to 80, a trailing / is allowed) and returns it with
// an explicit port.
func parseTarget(s string) (*url.URL, error) {
	bad := fmt.Errorf("%q must be an http:// URL such as %s", s, defaultTarget)
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "" ||
		u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return nil, bad
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("%q: port must be 1 to 65535", s)
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}, nil
}

// targetFromEnv is the gateway's own address: FIBERGUARD_ADDR, as the gateway reads it.
func targetFromEnv(getenv func(string) string) (*url.URL, error) {
	addr := getenv("FIBERGUARD_ADDR")
	if addr == "" {
		return parseTarget(defaultTarget)
	}
	host, port, err := net.SplitHostPort(addr)
	if host == "" {
		host = "127.0.0.1" // ":8080": the gateway listens on every interface, this one included
	}
	if err != nil {
		return nil, fmt.Errorf("FIBERGUARD_ADDR=%q must be host:port such as 127.0.0.1:8080 (or pass -target)", addr)
	}
	if port == "0" {
		return nil, fmt.Errorf("FIBERGUARD_ADDR=%q lets the gateway pick a free port: pass -target with the address it logs", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("FIBERGUARD_ADDR=%q: port must be 1 to 65535", addr)
	}
	u, err := parseTarget("http://" + net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("FIBERGUARD_ADDR=%q: %w", addr, err)
	}
	return u, nil
}

// parseArgs reads the command line. On -h it writes the usage to stdout and returns flag.ErrHelp; on an error
// in a flag's syntax it writes the flag package's message to stderr and returns errUsage; other errors say
// what is wrong.
func parseArgs(args []string, getenv func(string) string, cpus int, stdout, stderr io.Writer) (config, error) {
	var (
		cfg    config
		target string
	)
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var flagErr strings.Builder
	fs.SetOutput(&flagErr)
	rf := routesFlag{routes: &cfg.routes}
	fs.Var(rf, "r", "a route: `RATE:PATH`, requests per second and the path with its query; repeat for more routes")
	fs.Var(rf, "route", "same as -r `RATE:PATH`")
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to send (at most 24h)")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Second, "give up on a request after this long (at most 1m)")
	fs.IntVar(&cfg.inflight, "inflight", 1000, "at most this many requests waiting for an answer; a request due beyond it is not sent but counted as dropped")
	fs.StringVar(&target, "target", "", "the server `URL` (default "+defaultTarget+", or http://$FIBERGUARD_ADDR when set)")
	fs.BoolVar(&cfg.plain, "plain", false, "print one line per route each second even on a terminal")
	fs.Usage = func() {} // a syntax error gets one line and a pointer to -h, not the whole usage
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs, cpus)
			return cfg, flag.ErrHelp
		}
		fmt.Fprint(stderr, "load: "+flagErr.String())
		return cfg, errUsage
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (routes go in -r RATE:PATH)", fs.Arg(0))
	}

	var err error
	if target != "" {
		if cfg.target, err = parseTarget(target); err != nil {
			return cfg, fmt.Errorf("-target %w", err)
		}
	} else if cfg.target, err = targetFromEnv(getenv); err != nil {
		return cfg, err
	}
	switch {
	case cfg.duration <= 0 || cfg.duration > maxDuration:
		return cfg, fmt.Errorf("-duration %v must be above 0 and at most 24h", cfg.duration)
	case cfg.timeout <= 0 || cfg.timeout > maxTimeout:
		return cfg, fmt.Errorf("-timeout %v must be above 0 and at most 1m", cfg.timeout)
	case cfg.inflight < 1 || cfg.inflight > maxInflight:
		return cfg, fmt.Errorf("-inflight %d must be 1 to %d", cfg.inflight, maxInflight)
	}
	if len(cfg.routes) == 0 {
		cfg.routes = defaultRoutes(cpus)
	}
	return cfg, nil
}

func usage(w io.Writer, fs *flag.FlagSet, cpus int) {
	fmt.Fprintf(w, `Usage: go run ./examples/load [flags]

Sends GET requests to the demo gateway at a fixed rate per route, whatever the answers' latency (open loop: a
slow or rejecting server does not slow the sender down), for a bounded time, then prints a summary. Each second
it shows, per route: requests sent, 200s, rejections by the module that rejected them (the
Fiberguard-Rejected-By header), 503s without that header, other statuses, errors, timeouts, requests dropped
because -inflight were already waiting, and latency percentiles, counted from the instant each request was due.

Run the gateway in one terminal and the load in another:

  go run ./examples/gateway
  go run ./examples/load
  go run ./examples/load -duration 60s -r '800:/burn?ms=5' -r 50:/proxy/hello

Without -r, the mix for this machine (%d CPUs):

`, cpus)
	for _, r := range defaultRoutes(cpus) {
		fmt.Fprintf(w, "  -r '%s:%s'\n", formatRate(r.rate), r.path)
	}
	fmt.Fprint(w, `
/burn asks for 1.5 times the CPU time this machine has (loadshed sheds), /throttled for more than its 8-worker
backend serves (the throttle window closes), /proxy goes through upstreampick.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Exit status: 0 after a full run, 1 when the server cannot be reached, 2 for a bad command line, 130 when
interrupted (Ctrl-C stops sending, waits for the answers still due, then prints the summary).
`)
}

// formatRate prints a rate without a trailing .0.
func formatRate(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }
