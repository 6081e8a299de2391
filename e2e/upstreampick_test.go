//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/fiberapp"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
	"github.com/fiberguard/fiberguard/e2e/internal/nfdelay"
	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// The round-trip test runs three sites on loopback inside a private network namespace, two of them behind
// NFQUEUE delay lines: near (undelayed), mid (~20 ms RTT) and far (~50 ms RTT). The test re-executes its own
// binary twice inside the namespace (upstreamPickRoleEnv selects the role): a "delay" process runs the delay
// lines, apart from the load so that their timing stays exact, and a "measure" process runs the sites, the
// proxy (an app of the version upstreamPickFiberEnv names: Fiber v2, Fiber v3 or net/http) and the client and prints its measurements as one
// JSON line, which the parent checks.

const (
	upstreamPickRoleEnv  = "FIBERGUARD_E2E_UPSTREAMPICK_ROLE"
	upstreamPickFiberEnv = "FIBERGUARD_E2E_UPSTREAMPICK_FIBER"
	upstreamPickMarker   = "UPSTREAMPICK-RESULT "
	upstreamPickReady    = "UPSTREAMPICK-READY"

	// Ports inside the private namespace, where nothing else listens.
	upNearPort   = 18101
	upMidPort    = 18102
	upFarPort    = 18103
	upProxyPort  = 18100
	upRandomPort = 18110

	upMidQueue = 4101
	upFarQueue = 4102

	// Each direction is held half the round trip.
	upMidOneWay = 10 * time.Millisecond
	upFarOneWay = 25 * time.Millisecond

	upHealthInterval = 200 * time.Millisecond
	upHealthTimeout  = 150 * time.Millisecond
	// upRequestTimeout bounds every proxied request: a request slower than this is a hung one.
	upRequestTimeout = 3 * time.Second
)

// upResult is what the child measured.
type upResult struct {
	Err string `json:"err,omitempty"`

	// RTTMillis is each site's connect-time average after the first health round, by site name.
	RTTMillis map[string]float64 `json:"rtt_ms"`
	Tiers     map[string]int     `json:"tiers"`

	// Latency mode, after the first health round: responses by site.
	Latency map[string]int `json:"latency"`

	// Failover: requests sent continuously by several workers while near is shut down.
	Failover upFailover `json:"failover"`

	// Random mode (the control): responses by site.
	Random map[string]int `json:"random"`
}

type upFailover struct {
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// FirstError is the first error's text, for the log.
	FirstError string `json:"first_error,omitempty"`
	// MaxLatencyMillis is the slowest request (every request, failed or not).
	MaxLatencyMillis float64 `json:"max_latency_ms"`
	// NearAfterMillis is how long after the kill near still answered a request that started after the kill.
	NearAfterMillis float64 `json:"near_after_ms"`
	// UnhealthyAfterMillis is when Status first showed near unhealthy, after the kill.
	UnhealthyAfterMillis float64 `json:"unhealthy_after_ms"`
	// MidRTTMaxMillis is the highest connect-time average of mid seen during the failover.
	MidRTTMaxMillis float64 `json:"mid_rtt_max_ms"`
	FarRTTMinMillis float64 `json:"far_rtt_min_ms"`
	// Late counts the responses, by site, to requests started two health intervals after the kill or later.
	Late map[string]int `json:"late"`
}

func TestUpstreamPickRoundTrip(t *testing.T) {
	switch os.Getenv(upstreamPickRoleEnv) {
	case "delay":
		upstreamPickDelay()
	case "measure":
		upstreamPickChild()
	}
	itest.RequireRoot(t)
	env := upEnv{
		ip: itest.RequireBinary(t, "ip"),
		// One iptables backend explicitly: rules of both backends on the same packets would delay them twice.
		iptables: itest.RequireBinary(t, "iptables-nft"),
		nice:     itest.RequireBinary(t, "nice"),
	}
	var err error
	env.self, err = os.Executable()
	itest.Require(t, err == nil, "cannot find the test binary")
	fiberapp.Each(t, func(t *testing.T, fv fiberapp.Version) {
		e := env
		e.fiber = fv.Name()
		upstreamPickRoundTrip(t, e)
	})
}

// upstreamPickRoundTrip runs the measurements with the proxy on env.fiber and checks them.
func upstreamPickRoundTrip(t *testing.T, env upEnv) {
	// A loaded machine can hold a delayed packet well past its due time, and one late SYN moves the 20 ms
	// site's average towards the 50 ms site's. A failed check is retried only when the delay lines report
	// such a disturbance; with the emulation on time, a failed check fails the test.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		res, lines := upstreamPickAttempt(t, env, attempt)
		problems := upstreamPickCheck(res)
		if len(problems) == 0 {
			return
		}
		late := time.Duration(0)
		for _, st := range lines {
			late = max(late, st.MaxLate)
		}
		if late <= upMaxLate || attempt == attempts {
			for _, p := range problems {
				t.Error(p)
			}
			if late > upMaxLate {
				t.Errorf("the delay lines were disturbed in every attempt (last: a packet %v late)", late)
			}
			return
		}
		t.Logf("attempt %d: the delay lines released a packet %v late; retrying. Problems: %s",
			attempt, late, strings.Join(problems, "; "))
	}
}

// upMaxLate is the lateness of a delayed packet up to which the emulation counts as on time.
const upMaxLate = 5 * time.Millisecond

// upEnv is what an attempt runs, and the version the proxy runs on.
type upEnv struct{ ip, iptables, nice, self, fiber string }

// upstreamPickAttempt sets a private namespace up, runs the delay lines and the measurements in it, and
// removes it again.
func upstreamPickAttempt(t *testing.T, env upEnv, attempt int) (upResult, map[string]nfdelay.Stats) {
	t.Helper()
	ns := fmt.Sprintf("fgup%d-%d-%d", os.Getpid(), attempt, time.Now().UnixNano()%1_000_000)
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(env.ip, "netns", "add", ns)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// Deleting the namespace takes its loopback and iptables rules with it.
		if out, err := exec.CommandContext(ctx, env.ip, "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
		}
	}()
	run(env.ip, "netns", "exec", ns, env.ip, "link", "set", "lo", "up")
	for _, r := range []struct{ port, queue int }{{upMidPort, upMidQueue}, {upFarPort, upFarQueue}} {
		for _, dir := range []string{"--dport", "--sport"} {
			run(env.ip, "netns", "exec", ns, env.iptables, "-A", "OUTPUT", "-o", "lo", "-p", "tcp", dir,
				strconv.Itoa(r.port), "-j", "NFQUEUE", "--queue-num", strconv.Itoa(r.queue), "--queue-bypass")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	child := func(role string, prefix ...string) *exec.Cmd {
		args := append([]string{"netns", "exec", ns}, prefix...)
		args = append(args, env.self, "-test.run=^TestUpstreamPickRoundTrip$", "-test.count=1", "-test.timeout=60s")
		cmd := exec.CommandContext(ctx, env.ip, args...)
		cmd.Env = append(os.Environ(), upstreamPickRoleEnv+"="+role, upstreamPickFiberEnv+"="+env.fiber)
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}

	// The delay lines: started first, stopped (closing their stdin) after the measurements. At the highest
	// nice level their threads wake on time even when the machine is loaded.
	delay := child("delay", env.nice, "-n", "-20")
	delayIn, err := delay.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Stdout through a pipe of our own, read line by line until the process exits; stderr is read only after
	// the process has ended.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var delayErr bytes.Buffer
	delay.Stdout, delay.Stderr = outW, &delayErr
	err = delay.Start()
	_ = outW.Close()
	if err != nil {
		_ = outR.Close()
		t.Fatalf("starting the delay lines: %v", err)
	}
	ready := make(chan struct{})
	delayOut := make(chan []string, 1)
	go func() {
		defer outR.Close()
		var got []string
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if sc.Text() == upstreamPickReady && !slices.Contains(got, upstreamPickReady) {
				close(ready)
			}
			got = append(got, sc.Text())
		}
		delayOut <- got
	}()
	delayDone := make(chan error, 1)
	go func() { delayDone <- delay.Wait() }()
	stopDelay := sync.OnceValue(func() error {
		_ = delayIn.Close()
		select {
		case err := <-delayDone:
			return err
		case <-time.After(10 * time.Second):
			_ = delay.Process.Kill()
			return fmt.Errorf("delay lines did not stop: %w", <-delayDone)
		}
	})
	defer func() { _ = stopDelay() }()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		err := stopDelay()
		t.Fatalf("delay lines not ready within 30 s (%v)\n%s", err, delayErr.String())
	case err := <-delayDone:
		delayDone <- err // for stopDelay
		t.Fatalf("delay lines exited: %v\n%s", err, delayErr.String())
	}

	measure := child("measure")
	var stderr bytes.Buffer
	measure.Stderr = &stderr
	out, err := measure.Output()
	if err != nil {
		t.Fatalf("measuring in netns %s: %v\nstdout:\n%s\nstderr:\n%s", ns, err, out, stderr.Bytes())
	}
	if err := stopDelay(); err != nil {
		t.Fatalf("delay lines: %v\n%s", err, delayErr.String())
	}
	var out2 []string
	select {
	case out2 = <-delayOut:
	case <-time.After(10 * time.Second):
		t.Fatal("the delay lines' output did not end")
	}
	var lines map[string]nfdelay.Stats
	if err := upstreamPickParse(strings.Join(out2, "\n"), &lines); err != nil {
		t.Fatalf("delay lines: %v\n%s\n%s", err, strings.Join(out2, "\n"), delayErr.String())
	}
	t.Logf("attempt %d, delay lines: %+v", attempt, lines)
	for _, name := range []string{"mid", "far"} {
		if st, ok := lines[name]; !ok || st.Held == 0 || st.Overflow != 0 || st.VerdictErrors != 0 {
			t.Fatalf("delay line %s: %+v, want packets held, no overflow, no verdict error", name, st)
		}
	}
	var res upResult
	if err := upstreamPickParse(string(out), &res); err != nil {
		t.Fatalf("measurements: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.Bytes())
	}
	js, _ := json.Marshal(res)
	t.Logf("attempt %d, measured: %s", attempt, js)
	if res.Err != "" {
		t.Fatalf("measuring: %s", res.Err)
	}
	return res, lines
}

// upstreamPickParse decodes the JSON after the result marker in a child's output.
func upstreamPickParse(out string, v any) error {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, upstreamPickMarker); ok {
			return json.Unmarshal([]byte(rest), v)
		}
	}
	return errors.New("no result line")
}

// upstreamPickCheck returns what in res falls short of the behaviour required.
func upstreamPickCheck(res upResult) (problems []string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// The emulation itself: without real distances the rest proves nothing.
	if rtt := res.RTTMillis["near"]; rtt > 5 {
		fail("near connect time %.2f ms, want undelayed (< 5 ms)", rtt)
	}
	if rtt := res.RTTMillis["mid"]; rtt < 17 || rtt > 30 {
		fail("mid connect time %.2f ms, want ~20 ms", rtt)
	}
	if rtt := res.RTTMillis["far"]; rtt < 45 || rtt > 70 {
		fail("far connect time %.2f ms, want ~50 ms", rtt)
	}
	if res.Tiers["near"] != 0 || res.Tiers["mid"] != 1 || res.Tiers["far"] != 2 {
		fail("tiers %v, want near 0, mid 1, far 2", res.Tiers)
	}

	// Latency mode: the near site takes (nearly) everything.
	total := res.Latency["near"] + res.Latency["mid"] + res.Latency["far"]
	if total == 0 || float64(res.Latency["near"]) < 0.99*float64(total) || res.Latency["error"] != 0 {
		fail("latency mode: %v, want >= 99%% near and no error", res.Latency)
	}

	// Failover: nothing hangs, nothing fails, and traffic is on mid two health intervals after the kill.
	f := res.Failover
	if f.Requests == 0 || f.MaxLatencyMillis >= float64(upRequestTimeout/time.Millisecond) {
		fail("failover: %d requests, slowest %.1f ms; want none near the %v timeout", f.Requests,
			f.MaxLatencyMillis, upRequestTimeout)
	}
	if f.Errors != 0 {
		fail("failover: %d of %d requests failed (first: %s); connection failures must be retried on another upstream",
			f.Errors, f.Requests, f.FirstError)
	}
	if limit := float64(2 * upHealthInterval / time.Millisecond); f.NearAfterMillis > limit || f.UnhealthyAfterMillis > limit {
		fail("failover: near answered until %.1f ms and was marked unhealthy at %.1f ms after the kill; want both within two health intervals (%.0f ms)",
			f.NearAfterMillis, f.UnhealthyAfterMillis, limit)
	}
	late := f.Late["near"] + f.Late["mid"] + f.Late["far"]
	if late == 0 || float64(f.Late["mid"]) < 0.99*float64(late) {
		fail("failover: responses after two health intervals %v, want >= 99%% mid", f.Late)
	}

	// Random mode (the control): about a third each.
	total = res.Random["near"] + res.Random["mid"] + res.Random["far"]
	for _, s := range []string{"near", "mid", "far"} {
		if share := float64(res.Random[s]) / float64(max(total, 1)); share < 0.22 || share > 0.45 {
			fail("random mode: %s got %.1f%% of %d (%v), want about a third", s, 100*share, total, res.Random)
		}
	}
	return problems
}

// upstreamPickDelay runs the delay lines until its stdin closes, then prints their counters and exits.
func upstreamPickDelay() {
	// Idle Ps let a release thread returning from its sleep go on at once instead of waiting for a P.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 8))
	// No collector pauses either: the process lives for seconds and holds a few megabytes of garbage at most.
	debug.SetGCPercent(-1)
	lines := map[string]*nfdelay.Line{}
	for _, l := range []struct {
		name  string
		queue uint16
		delay time.Duration
	}{{"mid", upMidQueue, upMidOneWay}, {"far", upFarQueue, upFarOneWay}} {
		line, err := nfdelay.Start(l.queue, l.delay)
		if err != nil {
			fmt.Fprintf(os.Stderr, "delay line %s: %v\n", l.name, err)
			os.Exit(1)
		}
		lines[l.name] = line
	}
	fmt.Println(upstreamPickReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stats := map[string]nfdelay.Stats{}
	for name, l := range lines {
		stats[name] = l.Stats()
		_ = l.Close()
	}
	js, _ := json.Marshal(stats)
	fmt.Printf("\n%s%s\n", upstreamPickMarker, js)
	os.Exit(0)
}

// upstreamPickChild runs the measurements inside the namespace. It prints its result and exits without
// returning to the test framework: the fasthttp servers and clients it ran keep process-wide goroutines that
// only end with the process, and the parent checks the result.
func upstreamPickChild() {
	var res upResult
	if fv, ok := fiberapp.ByName(os.Getenv(upstreamPickFiberEnv)); ok {
		res = upstreamPickMeasure(fv)
	} else {
		res.Err = fmt.Sprintf("no version named %q", os.Getenv(upstreamPickFiberEnv))
	}
	js, _ := json.Marshal(res)
	fmt.Printf("\n%s%s\n", upstreamPickMarker, js)
	os.Exit(0)
}

// upSite is one site: an HTTP server answering with its name.
type upSite struct {
	name string
	addr string
	srv  *fasthttp.Server
	once sync.Once
}

func startUpSite(name string, port int) (*upSite, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, err
	}
	s := &upSite{name: name, addr: addr, srv: &fasthttp.Server{
		Handler: func(c *fasthttp.RequestCtx) { c.SetBodyString(name) },
	}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// kill shuts the site down: its listener closes at once (new connections are refused), requests in flight
// finish.
func (s *upSite) kill() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.ShutdownWithContext(ctx)
	})
}

// upProxy is an app proxying through a picker's middleware (proxy.Balancer over its LBClient on Fiber, its
// httputil.ReverseProxy on net/http), and a client for it.
type upProxy struct {
	picker fiberapp.Handle[upstreampickcore.Status]
	app    fiberapp.App
	client *fasthttp.HostClient
}

func startUpProxy(fv fiberapp.Version, port int, mode upstreampickcore.Mode, sites []*upSite) (*upProxy, error) {
	servers := make([]string, len(sites))
	for i, s := range sites {
		servers[i] = "http://" + s.addr
	}
	p := &upProxy{picker: fv.NewPicker(upstreampickcore.Config[any, any]{
		Servers:        servers,
		Mode:           mode,
		HealthInterval: upHealthInterval,
		HealthTimeout:  upHealthTimeout,
		Timeout:        upRequestTimeout,
		Registerer:     prometheus.NewRegistry(),
	})}
	p.app = fv.NewApp()
	p.app.Use(p.picker.Handler())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		_ = p.picker.Close()
		return nil, err
	}
	go func() { _ = p.app.Serve(ln) }()
	p.client = &fasthttp.HostClient{Addr: addr, MaxConns: 256}
	return p, nil
}

// get sends one request through the proxy and returns the answering site ("error" on failure), the error
// and the latency.
func (p *upProxy) get() (site string, lat time.Duration, err error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://site/")
	start := time.Now()
	err = p.client.DoTimeout(req, resp, upRequestTimeout+time.Second)
	lat = time.Since(start)
	if err == nil && resp.StatusCode() != fasthttp.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
	}
	if err != nil {
		return "error", lat, err
	}
	return string(resp.Body()), lat, nil
}

// spread sends n requests from the given number of workers and counts the answers by site.
func (p *upProxy) spread(n, workers int) map[string]int {
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
		jobs   = make(chan struct{}, n)
	)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				site, _, _ := p.get()
				mu.Lock()
				counts[site]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts
}

// waitMeasured waits (bounded) until every upstream has a connect-time sample: the first health round.
func (p *upProxy) waitMeasured() error {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		all := true
		for _, u := range p.picker.Status().Upstreams {
			all = all && u.Sampled
		}
		if all {
			return nil
		}
	}
	return fmt.Errorf("no first health round within 20 s: %+v", p.picker.Status())
}

func (p *upProxy) status(server string) upstreampickcore.UpstreamStatus {
	for _, u := range p.picker.Status().Upstreams {
		if u.Server == server {
			return u
		}
	}
	return upstreampickcore.UpstreamStatus{}
}

func upstreamPickMeasure(fv fiberapp.Version) (res upResult) {
	fail := func(format string, args ...any) upResult {
		res.Err = fmt.Sprintf(format, args...)
		return res
	}
	var sites []*upSite
	for _, s := range []struct {
		name string
		port int
	}{{"near", upNearPort}, {"mid", upMidPort}, {"far", upFarPort}} {
		site, err := startUpSite(s.name, s.port)
		if err != nil {
			return fail("site %s: %v", s.name, err)
		}
		defer site.kill()
		sites = append(sites, site)
	}
	near := sites[0]

	// Latency mode, after the first health round.
	px, err := startUpProxy(fv, upProxyPort, upstreampickcore.ModeLatency, sites)
	if err != nil {
		return fail("proxy: %v", err)
	}
	defer func() { _ = px.picker.Close() }()
	if err := px.waitMeasured(); err != nil {
		return fail("latency mode: %v", err)
	}
	res.RTTMillis, res.Tiers = map[string]float64{}, map[string]int{}
	for _, s := range sites {
		u := px.status("http://" + s.addr)
		res.RTTMillis[s.name], res.Tiers[s.name] = 1000*u.RTTSeconds, u.Tier
	}
	res.Latency = px.spread(1000, 8)

	// Failover: workers send continuously, pausing a little so as not to load the machine more than needed;
	// near is shut down; they keep going for five health intervals.
	const workers = 4
	type sample struct {
		start, end time.Time
		site       string
		err        error
	}
	var (
		mu      sync.Mutex
		samples []sample
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				site, lat, err := px.get()
				mu.Lock()
				samples = append(samples, sample{start: start, end: start.Add(lat), site: site, err: err})
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	f := &res.Failover
	f.FarRTTMinMillis = math.MaxFloat64
	unhealthyAt := killed.Add(time.Hour)
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := px.picker.Status().Upstreams
			if !st[0].Healthy && unhealthyAt.After(time.Now()) {
				unhealthyAt = time.Now()
			}
			f.MidRTTMaxMillis = max(f.MidRTTMaxMillis, 1000*st[1].RTTSeconds)
			f.FarRTTMinMillis = min(f.FarRTTMinMillis, 1000*st[2].RTTSeconds)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	near.kill()
	time.Sleep(5 * upHealthInterval)
	close(stop)
	wg.Wait()
	watch.Wait()
	f.UnhealthyAfterMillis = ms(unhealthyAt.Sub(killed))
	f.Late = map[string]int{}
	for _, s := range samples {
		f.Requests++
		f.MaxLatencyMillis = max(f.MaxLatencyMillis, ms(s.end.Sub(s.start)))
		if s.err != nil {
			f.Errors++
			if f.FirstError == "" {
				f.FirstError = s.err.Error()
			}
		}
		if s.site == "near" && s.start.After(killed) {
			f.NearAfterMillis = max(f.NearAfterMillis, ms(s.end.Sub(killed)))
		}
		if !s.start.Before(killed.Add(2 * upHealthInterval)) {
			f.Late[s.site]++
		}
	}
	_ = px.picker.Close()
	_ = px.app.Shutdown(2 * time.Second)

	// Random mode (the control), with near back.
	nearAgain, err := startUpSite("near", upNearPort)
	if err != nil {
		return fail("restarting near: %v", err)
	}
	defer nearAgain.kill()
	sites[0] = nearAgain
	rx, err := startUpProxy(fv, upRandomPort, upstreampickcore.ModeRandom, sites)
	if err != nil {
		return fail("random proxy: %v", err)
	}
	defer func() { _ = rx.picker.Close() }()
	if err := rx.waitMeasured(); err != nil {
		return fail("random mode: %v", err)
	}
	res.Random = rx.spread(900, 16)
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
