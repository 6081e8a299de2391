// Command convergence shows the throttle keeping a backend near its capacity under a load well above it.
//
// The backend serves each request in Base while at most K requests are in flight; above K it thrashes, and
// service time grows with the square of the overload (2K in flight: 4 × Base). It exports its in-flight count
// as the gauge backend_in_flight. A real Prometheus (the Debian `prometheus` binary) scrapes it every second.
// A gateway proxies to the backend, with the throttle fed by the query `backend_in_flight > K`, or without it.
// vegeta drives the gateway open-loop at Factor × the backend's capacity (K / Base requests per second).
//
//	cd bench && go run ./cmd/convergence                  # ~75 s: 45 s throttled, 25 s without
//	cd bench && go run ./cmd/convergence -k 50 -base 100ms -factor 2 -with 45s -without 25s
//
// It prints the window and the backend's in-flight count over time, then p50/p99 of the backend's service time
// and of the clients' successful requests, with and without the throttle, as Markdown.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	throttlecore "github.com/fiberguard/fiberguard/throttle/core"

	"github.com/fiberguard/fiberguard/throttle"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	vegeta "github.com/tsenart/vegeta/v12/lib"
	"github.com/valyala/fasthttp"
)

type params struct {
	k        int
	base     time.Duration
	factor   float64
	with     time.Duration
	without  time.Duration
	interval time.Duration
	promBin  string
}

func main() {
	var p params
	flag.IntVar(&p.k, "k", 50, "backend capacity: concurrent requests served without degradation")
	flag.DurationVar(&p.base, "base", 100*time.Millisecond, "backend service time at or below K in flight")
	flag.Float64Var(&p.factor, "factor", 2, "offered load as a multiple of the backend's capacity (K / base)")
	flag.DurationVar(&p.with, "with", 45*time.Second, "length of the run with the throttle")
	flag.DurationVar(&p.without, "without", 25*time.Second, "length of the run without the throttle")
	flag.DurationVar(&p.interval, "interval", time.Second, "Prometheus scrape interval and throttle Config.Interval")
	flag.StringVar(&p.promBin, "prometheus", "prometheus", "Prometheus binary")
	flag.Parse()
	if err := run(p); err != nil {
		log.Fatal(err)
	}
}

// backend is the protected service: fine up to k in flight, thrashing above.
type backend struct {
	k        int
	base     time.Duration
	inFlight atomic.Int64
	peak     atomic.Int64

	mu      sync.Mutex
	service []time.Duration
	addr    string
	app     *fiber.App
}

func newBackend(k int, base time.Duration, phase string) (*backend, error) {
	b := &backend{k: k, base: base}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "backend_in_flight",
		Help:        "Requests the backend is serving.",
		ConstLabels: prometheus.Labels{"phase": phase},
	}, func() float64 { return float64(b.inFlight.Load()) }))

	b.app = fiber.New(fiber.Config{DisableStartupMessage: true})
	b.app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	b.app.Get("/work", func(c *fiber.Ctx) error {
		n := b.inFlight.Add(1)
		defer b.inFlight.Add(-1)
		for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
		}
		d := b.base
		if over := float64(n) / float64(b.k); over > 1 {
			d = time.Duration(float64(d) * over * over)
		}
		time.Sleep(d)
		b.mu.Lock()
		b.service = append(b.service, d)
		b.mu.Unlock()
		return c.SendString("ok")
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.addr = ln.Addr().String()
	go func() { _ = b.app.Listener(ln) }()
	return b, nil
}

// gateway proxies /work to the backend, behind mw when it is not nil.
func newGateway(backendAddr string, mw fiber.Handler) (string, *fiber.App, error) {
	client := &fasthttp.Client{MaxConnsPerHost: 50000, ReadTimeout: 30 * time.Second}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	if mw != nil {
		app.Use(mw)
	}
	app.Get("/work", func(c *fiber.Ctx) error {
		return proxy.DoTimeout(c, "http://"+backendAddr+"/work", 30*time.Second, client)
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go func() { _ = app.Listener(ln) }()
	return ln.Addr().String(), app, nil
}

type sample struct {
	at       time.Duration
	window   int
	inFlight int64
	admitted uint64
	rejected uint64
}

type outcome struct {
	name             string
	offered          int
	ok, rejected     int
	timedOut, failed int
	okLat            []time.Duration
	service          []time.Duration
	samples          []sample
	peakInFlight     int64
	duration         time.Duration
	settledWindows   []int // windows sampled in the second half of the run
	settledInFlights []int64
}

func run(p params) error {
	// Without the throttle the gateway and the backend (both in this process) pile up thousands of connections,
	// four descriptors per request; lift the descriptor limit so that the collapse measured is the backend's.
	if err := raiseFileLimit(1 << 18); err != nil {
		log.Printf("descriptor limit not raised (%v): the run without throttle may hit it", err)
	}
	promPath, err := exec.LookPath(p.promBin)
	if err != nil {
		return fmt.Errorf("prometheus binary %q not found (apt-get install prometheus): %w", p.promBin, err)
	}
	withB, err := newBackend(p.k, p.base, "throttled")
	if err != nil {
		return err
	}
	withoutB, err := newBackend(p.k, p.base, "unthrottled")
	if err != nil {
		return err
	}
	prom, err := startPrometheus(promPath, p.interval, withB.addr, withoutB.addr)
	if err != nil {
		return err
	}
	defer prom.stop()

	query := fmt.Sprintf(`backend_in_flight{phase="throttled"} > %d`, p.k)
	th := throttle.NewThrottler(throttle.Config{
		PrometheusURL: prom.url,
		Triggers:      []throttlecore.Trigger{{Name: "backend_in_flight", Query: query}},
		Interval:      p.interval,
		Timeout:       p.interval,
		WindowMin:     max(1, p.k/10),
		WindowMax:     p.k * 20,
		RetryAfter:    -1,
	})
	defer th.Close()

	rate := p.factor * float64(p.k) / p.base.Seconds()
	fmt.Printf("# throttle convergence\n\nbackend: K = %d, base service time %v (capacity %.0f req/s), service time × (in-flight/K)² above K\n",
		p.k, p.base, float64(p.k)/p.base.Seconds())
	fmt.Printf("load: open-loop %.0f req/s (%.1f × capacity), client timeout 5 s; Prometheus scrape and throttle interval %v\n", rate, p.factor, p.interval)
	fmt.Printf("throttle: query `%s`, window [%d, %d], fail-open\n\n", query, max(1, p.k/10), p.k*20)

	with, err := attack("with throttle", withB, th, p, rate, p.with)
	if err != nil {
		return err
	}
	without, err := attack("without throttle", withoutB, nil, p, rate, p.without)
	if err != nil {
		return err
	}
	report(p, with, without)
	return nil
}

func attack(name string, b *backend, th *throttle.Throttler, p params, rate float64, d time.Duration) (*outcome, error) {
	var mw fiber.Handler
	if th != nil {
		mw = th.Handler()
	}
	gw, app, err := newGateway(b.addr, mw)
	if err != nil {
		return nil, err
	}
	defer func() { _ = app.Shutdown() }()

	out := &outcome{name: name, duration: d}
	start := time.Now()
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			s := sample{at: time.Since(start), inFlight: b.inFlight.Load()}
			if th != nil {
				snap := th.Status()
				s.window, s.admitted, s.rejected = snap.Window, snap.Admitted, snap.Rejected
			}
			out.samples = append(out.samples, s)
		}
	}()

	targeter := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: "http://" + gw + "/work"})
	attacker := vegeta.NewAttacker(vegeta.Timeout(5*time.Second), vegeta.Connections(20000), vegeta.MaxWorkers(20000), vegeta.KeepAlive(true))
	pacer := vegeta.Rate{Freq: int(math.Round(rate)), Per: time.Second}
	for res := range attacker.Attack(targeter, pacer, d, name) {
		out.offered++
		switch {
		case res.Code == http.StatusOK:
			out.ok++
			out.okLat = append(out.okLat, res.Latency)
		case res.Code == http.StatusServiceUnavailable:
			out.rejected++
		case strings.Contains(res.Error, "Timeout") || strings.Contains(res.Error, "deadline"):
			out.timedOut++
		default:
			out.failed++
		}
	}
	close(stopSampling)
	<-sampled

	b.mu.Lock()
	out.service = append([]time.Duration(nil), b.service...)
	b.mu.Unlock()
	out.peakInFlight = b.peak.Load()
	for _, s := range out.samples {
		if s.at >= d/2 && s.at <= d {
			out.settledWindows = append(out.settledWindows, s.window)
			out.settledInFlights = append(out.settledInFlights, s.inFlight)
		}
	}
	return out, nil
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func report(p params, with, without *outcome) {
	fmt.Println("## Window over time (with throttle)")
	fmt.Println()
	fmt.Println("Sampled every second: the window, the backend's in-flight count, and requests admitted/rejected by the")
	fmt.Println("throttle during that second.")
	fmt.Println()
	fmt.Println("| t (s) | window | backend in flight | admitted/s | rejected/s |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	var prev sample
	for _, s := range with.samples {
		fmt.Printf("| %.1f | %d | %d | %d | %d |\n", s.at.Seconds(), s.window, s.inFlight, s.admitted-prev.admitted, s.rejected-prev.rejected)
		prev = s
	}
	fmt.Println()
	fmt.Println("## Backend in flight over time (without throttle)")
	fmt.Println()
	fmt.Println("| t (s) | backend in flight |")
	fmt.Println("|---:|---:|")
	for _, s := range without.samples {
		fmt.Printf("| %.1f | %d |\n", s.at.Seconds(), s.inFlight)
	}
	fmt.Println()
	fmt.Println("## Summary")
	fmt.Println()
	fmt.Printf("| run | offered | 200 | 503 (rejected) | timed out | other errors | goodput (200/s) | backend service p50 | backend service p99 | client p50 (200) | client p99 (200) | backend peak in flight | window (2nd half) mean [min, max] | backend in flight (2nd half) mean |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, o := range []*outcome{with, without} {
		win := "—"
		if o == with {
			win = fmt.Sprintf("%.1f [%d, %d]", meanInts(o.settledWindows), slices.Min(o.settledWindows), slices.Max(o.settledWindows))
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %d | %.0f | %v | %v | %v | %v | %d | %s | %.1f |\n",
			o.name, o.offered, o.ok, o.rejected, o.timedOut, o.failed, float64(o.ok)/o.duration.Seconds(),
			pct(o.service, 0.5).Round(time.Millisecond), pct(o.service, 0.99).Round(time.Millisecond),
			pct(o.okLat, 0.5).Round(time.Millisecond), pct(o.okLat, 0.99).Round(time.Millisecond),
			o.peakInFlight, win, meanInt64s(o.settledInFlights))
	}
	fmt.Println()
	fmt.Printf("backend capacity: %d in flight, %v service time, %.0f req/s\n", p.k, p.base, float64(p.k)/p.base.Seconds())
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		fmt.Printf("descriptor limit of this process (vegeta, gateway and backend together): %d\n", lim.Cur)
	}
}

func meanInts(v []int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0
	for _, x := range v {
		s += x
	}
	return float64(s) / float64(len(v))
}

func meanInt64s(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s int64
	for _, x := range v {
		s += x
	}
	return float64(s) / float64(len(v))
}

type promProcess struct {
	url  string
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

func startPrometheus(bin string, interval time.Duration, targets ...string) (*promProcess, error) {
	dir, err := os.MkdirTemp("", "convergence-prometheus-")
	if err != nil {
		return nil, err
	}
	ival := strconv.FormatInt(interval.Milliseconds(), 10) + "ms"
	conf := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n  - job_name: backend\n    static_configs:\n      - targets: [%s]\n",
		ival, ival, `"`+strings.Join(targets, `", "`)+`"`)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &promProcess{url: "http://" + addr, cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()

	// Ready once every target has been scraped: `up` has one sample per target.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		select {
		case <-p.done:
			return nil, errors.New("prometheus exited during start")
		case <-ctx.Done():
			p.stop()
			return nil, errors.New("prometheus did not scrape the backends within 60 s")
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(p.url + "/api/v1/query?query=count(up%3D%3D1)")
		if err != nil {
			continue
		}
		var buf [512]byte
		n, _ := resp.Body.Read(buf[:])
		resp.Body.Close()
		if strings.Contains(string(buf[:n]), fmt.Sprintf(`"%d"]`, len(targets))) {
			return p, nil
		}
	}
}

func (p *promProcess) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = os.RemoveAll(p.dir)
}

func raiseFileLimit(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= n {
		return nil
	}
	lim.Cur = n
	if lim.Max < n {
		lim.Max = n // allowed as root
	}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}
