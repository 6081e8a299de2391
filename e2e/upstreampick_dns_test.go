//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"

	"github.com/fiberguard/fiberguard/e2e/internal/dnsserver"
	"github.com/fiberguard/fiberguard/e2e/internal/fiberapp"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
	"github.com/fiberguard/fiberguard/e2e/internal/nfdelay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// TestUpstreamPickDNS runs upstreampick's DNS discovery against a real authoritative DNS server while requests
// flow through each version's proxy (proxy.Balancer on Fiber, the Picker's httputil.ReverseProxy on net/http). Four sites listen on one port of four loopback addresses in a private network
// namespace: near1 and near2 (undelayed), mid (~20 ms round trip) and far (~50 ms), the last two behind NFQUEUE
// delay lines. far is a static server; near.api.test's A records list the near replicas, and the SRV records of
// _http._tcp.remote.api.test point at mid. The test adds near2 to the A records, then removes near1 while slow
// requests are in flight on it, then shuts near1 down once it has drained.
//
// As in TestUpstreamPickRoundTrip, the test re-executes its binary in the namespace twice (pickDNSRoleEnv
// selects the role): a "delay" process for the delay lines and a "measure" process that runs the DNS server,
// the sites, the proxy and the client and prints its measurements as one JSON line for the parent to check.
func TestUpstreamPickDNS(t *testing.T) {
	switch os.Getenv(pickDNSRoleEnv) {
	case "delay":
		pickDNSDelay()
	case "measure":
		pickDNSChild()
	}
	itest.RequireRoot(t)
	env := pickDNSEnv{
		ip: itest.RequireBinary(t, "ip"),
		// One iptables backend: rules of both on the same packets would delay them twice.
		iptables: itest.RequireBinary(t, "iptables-nft"),
		nice:     itest.RequireBinary(t, "nice"),
	}
	var err error
	env.self, err = os.Executable()
	itest.Require(t, err == nil, "cannot find the test binary")
	fiberapp.Each(t, func(t *testing.T, fv fiberapp.Version) {
		env := env
		env.version = fv.Name()
		testUpstreamPickDNS(t, env)
	})
}

func testUpstreamPickDNS(t *testing.T, env pickDNSEnv) {
	// A check that fails is retried only when a delay line released a packet late (a loaded machine): with the
	// emulation on time, a failure is the picker's.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		res, lines := pickDNSAttempt(t, env, attempt)
		problems := pickDNSCheck(res)
		if len(problems) == 0 {
			return
		}
		late := time.Duration(0)
		for _, st := range lines {
			late = max(late, st.MaxLate)
		}
		if late <= pickDNSMaxLate || attempt == attempts {
			for _, p := range problems {
				t.Error(p)
			}
			if late > pickDNSMaxLate {
				t.Errorf("the delay lines were disturbed in every attempt (last: a packet %v late)", late)
			}
			return
		}
		t.Logf("attempt %d: a delay line released a packet %v late; retrying. Problems: %s", attempt, late,
			strings.Join(problems, "; "))
	}
}

const (
	pickDNSRoleEnv = "FIBERGUARD_E2E_UPSTREAMPICK_DNS_ROLE"
	// pickDNSVersionEnv names the version the measuring child serves (fiberapp's names).
	pickDNSVersionEnv = "FIBERGUARD_E2E_UPSTREAMPICK_DNS_VERSION"
	pickDNSMarker     = "UPSTREAMPICK-DNS-RESULT "
	pickDNSReady      = "UPSTREAMPICK-DNS-READY"

	// Inside the namespace, where nothing else listens: every site on one port, as a DNS name's replicas are.
	pickDNSPort      = 18300
	pickDNSProxyPort = 18310

	pickDNSMidQueue, pickDNSFarQueue = 4201, 4202
	// Each direction is held half the round trip.
	pickDNSMidOneWay, pickDNSFarOneWay = 10 * time.Millisecond, 25 * time.Millisecond

	pickDNSInterval       = 250 * time.Millisecond // of both names
	pickDNSHealthInterval = 200 * time.Millisecond
	pickDNSHealthTimeout  = 150 * time.Millisecond
	pickDNSTimeout        = 3 * time.Second // of every proxied request
	// pickDNSSlow is how long a site takes to answer /slow: longer than the drain takes to begin.
	pickDNSSlow = 1500 * time.Millisecond
	// pickDNSRemoveAfter is the number of answers in a row an address must be missing from to drain (README).
	pickDNSRemoveAfter = 3
	// pickDNSMaxLate is the lateness of a delayed packet up to which the emulation counts as on time.
	pickDNSMaxLate = 5 * time.Millisecond
)

// pickDNSSites are the sites' names and addresses; a site answers with its name.
var pickDNSSites = []struct{ name, ip string }{
	{"near1", "127.0.0.1"}, {"near2", "127.0.0.2"}, {"mid", "127.0.0.20"}, {"far", "127.0.0.50"},
}

// pickDNSServer is how the picker names a site's upstream.
func pickDNSServer(ip string) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(pickDNSPort))
}

// pickDNSEnv is what the parent runs: its tools, its own binary and the version the measuring child serves.
type pickDNSEnv struct{ ip, iptables, nice, self, version string }

// pickDNSResult is what the measuring process saw.
type pickDNSResult struct {
	Err string `json:"err,omitempty"`

	// RTTMillis and Tiers are each site's connect-time average and tier once measured.
	RTTMillis map[string]float64 `json:"rtt_ms"`
	Tiers     map[string]int     `json:"tiers"`
	// Before are the responses by site before near2 was added.
	Before map[string]int `json:"before"`

	// AddedAfterMillis is how long after the add the first request near2 answered started.
	AddedAfterMillis float64 `json:"added_after_ms"`
	// Added are the responses by site to requests started from two intervals after the add until the removal.
	Added map[string]int `json:"added"`

	// SlowOnNear1 counts the slow requests near1 took just before its removal, SlowAnswered those it answered.
	SlowOnNear1  int64 `json:"slow_on_near1"`
	SlowAnswered int   `json:"slow_answered"`
	// DrainingInFlight is the most requests in flight seen on near1 while it drained.
	DrainingInFlight int `json:"draining_in_flight"`
	// DrainedAfterMillis is when near1 left Status, after the removal.
	DrainedAfterMillis float64 `json:"drained_after_ms"`
	// Near1AfterMillis is the latest start, after the removal, of a request near1 answered (slow ones aside).
	Near1AfterMillis float64 `json:"near1_after_ms"`
	// Removed are the responses by site to requests started from removeAfter+1 intervals after the removal.
	Removed map[string]int `json:"removed"`

	Requests   int    `json:"requests"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Discovery is the picker's view of both names at the end.
	Discovery []upstreampickcore.DiscoveryStatus `json:"discovery"`
}

// pickDNSAttempt sets a private namespace up, runs the delay lines and the measurements in it, and removes it.
func pickDNSAttempt(t *testing.T, env pickDNSEnv, attempt int) (pickDNSResult, map[string]nfdelay.Stats) {
	t.Helper()
	ns := fmt.Sprintf("fgdns%d-%d", os.Getpid(), attempt)
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run(env.ip, "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	// Deleting the namespace takes its loopback and rules with it.
	defer func() {
		if err := run(env.ip, "netns", "del", ns); err != nil {
			t.Error(err)
		}
	}()
	setup := [][]string{{env.ip, "netns", "exec", ns, env.ip, "link", "set", "lo", "up"}}
	for _, r := range []struct {
		ip    string
		queue int
	}{{"127.0.0.20", pickDNSMidQueue}, {"127.0.0.50", pickDNSFarQueue}} {
		// On loopback OUTPUT sees each packet once: to the site, and from it.
		for _, dir := range []string{"-d", "-s"} {
			setup = append(setup, []string{env.ip, "netns", "exec", ns, env.iptables, "-A", "OUTPUT", "-o", "lo",
				"-p", "tcp", dir, r.ip, "-j", "NFQUEUE", "--queue-num", strconv.Itoa(r.queue), "--queue-bypass"})
		}
	}
	for _, args := range setup {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	child := func(role string, prefix ...string) *exec.Cmd {
		args := append(append([]string{"netns", "exec", ns}, prefix...), env.self,
			"-test.run=^TestUpstreamPickDNS$", "-test.count=1", "-test.timeout=80s")
		cmd := exec.CommandContext(ctx, env.ip, args...)
		cmd.Env = append(os.Environ(), pickDNSRoleEnv+"="+role, pickDNSVersionEnv+"="+env.version)
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}

	// The delay lines, at the highest priority so that they wake on time on a loaded machine; they stop when
	// their stdin closes, after printing their counters.
	delay := child("delay", env.nice, "-n", "-20")
	var delayErr strings.Builder
	delay.Stderr = &delayErr
	stdin, err := delay.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := delay.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := delay.Start(); err != nil {
		t.Fatalf("starting the delay lines: %v", err)
	}
	ready, output := make(chan struct{}), make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == pickDNSReady {
				close(ready)
			}
			all.WriteString(sc.Text() + "\n")
		}
		output <- all.String()
	}()
	stop := sync.OnceValues(func() (string, error) {
		_ = stdin.Close()
		var out string
		select {
		case out = <-output:
		case <-time.After(10 * time.Second):
			_ = delay.Process.Kill()
			out = <-output
		}
		return out, delay.Wait()
	})
	defer func() { _, _ = stop() }()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		_, err := stop()
		t.Fatalf("delay lines not ready within 30 s (%v)\n%s", err, delayErr.String())
	case out := <-output:
		output <- out // for stop
		_, err := stop()
		t.Fatalf("delay lines exited: %v\n%s%s", err, out, delayErr.String())
	}

	measure := child("measure")
	var measureErr strings.Builder
	measure.Stderr = &measureErr
	out, err := measure.Output()
	if err != nil {
		t.Fatalf("measuring in netns %s: %v\nstdout:\n%s\nstderr:\n%s", ns, err, out, measureErr.String())
	}
	delayOut, err := stop()
	if err != nil {
		t.Fatalf("delay lines: %v\n%s", err, delayErr.String())
	}
	var lines map[string]nfdelay.Stats
	if err := pickDNSParse(delayOut, &lines); err != nil {
		t.Fatalf("delay lines: %v\n%s\n%s", err, delayOut, delayErr.String())
	}
	t.Logf("attempt %d, delay lines: %+v", attempt, lines)
	for _, name := range []string{"mid", "far"} {
		if st, ok := lines[name]; !ok || st.Held == 0 || st.Overflow != 0 || st.VerdictErrors != 0 {
			t.Fatalf("delay line %s: %+v, want packets held, no overflow, no verdict error", name, st)
		}
	}
	var res pickDNSResult
	if err := pickDNSParse(string(out), &res); err != nil {
		t.Fatalf("measurements: %v\nstdout:\n%s\nstderr:\n%s", err, out, measureErr.String())
	}
	js, _ := json.Marshal(res)
	t.Logf("attempt %d, measured: %s", attempt, js)
	if res.Err != "" {
		t.Fatalf("measuring: %s\nstderr:\n%s", res.Err, measureErr.String())
	}
	return res, lines
}

// pickDNSParse decodes the JSON after the result marker in a child's output.
func pickDNSParse(out string, v any) error {
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, pickDNSMarker); ok {
			return json.Unmarshal([]byte(rest), v)
		}
	}
	return errors.New("no result line")
}

// pickDNSCheck returns what in res falls short of the behaviour required.
func pickDNSCheck(res pickDNSResult) (problems []string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	interval := float64(pickDNSInterval / time.Millisecond)

	// The emulation: without real distances the rest proves nothing.
	for _, s := range []string{"near1", "near2"} {
		if rtt := res.RTTMillis[s]; rtt > 5 || res.Tiers[s] != 0 {
			fail("%s: connect time %.2f ms, tier %d; want undelayed (< 5 ms), tier 0", s, rtt, res.Tiers[s])
		}
	}
	if rtt := res.RTTMillis["mid"]; rtt < 17 || rtt > 30 || res.Tiers["mid"] != 1 {
		fail("mid (SRV): connect time %.2f ms, tier %d; want ~20 ms, tier 1", rtt, res.Tiers["mid"])
	}
	if rtt := res.RTTMillis["far"]; rtt < 45 || rtt > 70 || res.Tiers["far"] != 2 {
		fail("far (static): connect time %.2f ms, tier %d; want ~50 ms, tier 2", rtt, res.Tiers["far"])
	}
	if total := pickDNSSum(res.Before); total == 0 || float64(res.Before["near1"]) < 0.99*float64(total) {
		fail("before the add: %v, want >= 99%% near1", res.Before)
	}

	// The add: near2 takes traffic within two intervals, then its share of the near site.
	if res.AddedAfterMillis < 0 || res.AddedAfterMillis > 2*interval {
		fail("near2 answered its first request %.1f ms after the add, want within two intervals (%.0f ms)",
			res.AddedAfterMillis, 2*interval)
	}
	total := pickDNSSum(res.Added)
	if near := res.Added["near1"] + res.Added["near2"]; total == 0 || float64(near) < 0.99*float64(total) ||
		float64(res.Added["near2"]) < 0.3*float64(total) || float64(res.Added["near1"]) < 0.3*float64(total) {
		fail("after the add: %v, want >= 99%% near, shared between near1 and near2", res.Added)
	}

	// The removal: near1 drains, its requests in flight finish, nothing fails.
	if res.Errors != 0 {
		fail("%d of %d requests failed (first: %s), want none", res.Errors, res.Requests, res.FirstError)
	}
	if res.SlowOnNear1 == 0 || res.SlowAnswered != int(res.SlowOnNear1) || res.DrainingInFlight == 0 {
		fail("near1 took %d slow requests and answered %d; %d in flight while it drained; want all answered, some during the drain",
			res.SlowOnNear1, res.SlowAnswered, res.DrainingInFlight)
	}
	if limit := float64(pickDNSRemoveAfter+1) * interval; res.Near1AfterMillis > limit {
		fail("near1 still took a request %.1f ms after the removal, want none after %.0f ms", res.Near1AfterMillis, limit)
	}
	if res.DrainedAfterMillis <= 0 {
		fail("near1 was never forgotten after its removal")
	}
	if total := pickDNSSum(res.Removed); total == 0 || float64(res.Removed["near2"]) < 0.99*float64(total) {
		fail("after the removal: %v, want >= 99%% near2", res.Removed)
	}
	// Both names end with the addresses their records hold. A lookup that timed out on a loaded machine kept
	// the last addresses, as it should; more than the odd one would mean the server or the client is broken.
	want := map[string]string{"dns": pickDNSServer("127.0.0.2"), "dns-srv": pickDNSServer("127.0.0.20")}
	for _, d := range res.Discovery {
		if len(d.Addresses) != 1 || d.Addresses[0] != want[d.Type] || d.ResolvedAt == nil || d.Errors*10 > d.Resolutions {
			fail("discovery of %s: addresses %v, %d errors in %d resolutions (last: %s); want [%s], errors rare",
				d.Target, d.Addresses, d.Errors, d.Resolutions, d.LastError, want[d.Type])
		}
	}
	if len(res.Discovery) != 2 {
		fail("discovery %+v, want both names", res.Discovery)
	}
	return problems
}

func pickDNSSum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// pickDNSDelay runs the delay lines until stdin closes, then prints their counters and exits.
func pickDNSDelay() {
	// Spare Ps and no collector pauses keep the release threads on time.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 8))
	debug.SetGCPercent(-1)
	lines := map[string]*nfdelay.Line{}
	for name, l := range map[string]struct {
		queue uint16
		delay time.Duration
	}{"mid": {pickDNSMidQueue, pickDNSMidOneWay}, "far": {pickDNSFarQueue, pickDNSFarOneWay}} {
		line, err := nfdelay.Start(l.queue, l.delay)
		if err != nil {
			fmt.Fprintf(os.Stderr, "delay line %s: %v\n", name, err)
			os.Exit(1)
		}
		lines[name] = line
	}
	fmt.Println(pickDNSReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stats := map[string]nfdelay.Stats{}
	for name, l := range lines {
		stats[name] = l.Stats()
		_ = l.Close()
	}
	js, _ := json.Marshal(stats)
	fmt.Printf("\n%s%s\n", pickDNSMarker, js)
	os.Exit(0)
}

// pickDNSChild measures and prints the result, then exits without returning to the test framework: fasthttp's
// servers and clients keep process-wide goroutines that end only with the process.
func pickDNSChild() {
	var res pickDNSResult
	if fv, ok := fiberapp.ByName(os.Getenv(pickDNSVersionEnv)); ok {
		res = pickDNSMeasure(fv)
	} else {
		res.Err = fmt.Sprintf("no version named %q", os.Getenv(pickDNSVersionEnv))
	}
	js, _ := json.Marshal(res)
	fmt.Printf("\n%s%s\n", pickDNSMarker, js)
	os.Exit(0)
}

// pickDNSSample is one request through the proxy.
type pickDNSSample struct {
	start time.Time
	site  string // the answering site, "" on failure
	err   error
}

func pickDNSMeasure(fv fiberapp.Version) (res pickDNSResult) {
	fail := func(format string, args ...any) pickDNSResult {
		res.Err = fmt.Sprintf(format, args...)
		return res
	}
	zone, err := dnsserver.Start()
	if err != nil {
		return fail("DNS server: %v", err)
	}
	defer func() { _ = zone.Close() }()
	zone.SetAddrs("near.api.test", "127.0.0.1")
	zone.SetAddrs("mid.api.test", "127.0.0.20")
	zone.SetSRV("_http._tcp.remote.api.test", dnsserver.SRV{Target: "mid.api.test", Port: pickDNSPort})

	// Every site answers with its name; /slow after pickDNSSlow, counted on arrival.
	var slow [4]atomic.Int64
	servers := map[string]*fasthttp.Server{}
	for i, s := range pickDNSSites {
		ln, err := net.Listen("tcp4", net.JoinHostPort(s.ip, strconv.Itoa(pickDNSPort)))
		if err != nil {
			return fail("site %s: %v", s.name, err)
		}
		srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
			if string(c.Path()) == "/slow" {
				slow[i].Add(1)
				time.Sleep(pickDNSSlow)
			}
			c.SetBodyString(s.name)
		}}
		servers[s.name] = srv
		go func() { _ = srv.Serve(ln) }()
		defer func() { _ = srv.Shutdown() }()
	}

	picker := fv.NewPicker(upstreampickcore.Config[any, any]{
		Servers: []string{pickDNSServer("127.0.0.50")},
		Discover: []upstreampickcore.Discovery{
			upstreampickcore.DNS("http://near.api.test.:"+strconv.Itoa(pickDNSPort), pickDNSInterval),
			upstreampickcore.DNSSRV("_http._tcp.remote.api.test.", "http", pickDNSInterval),
		},
		Resolver:       zone.Resolver(),
		HealthInterval: pickDNSHealthInterval,
		HealthTimeout:  pickDNSHealthTimeout,
		Timeout:        pickDNSTimeout,
		Registerer:     prometheus.NewRegistry(),
	})
	defer func() { _ = picker.Close() }()
	app := fv.NewApp()
	app.Use(picker.Handler())
	proxyAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pickDNSProxyPort))
	ln, err := net.Listen("tcp4", proxyAddr)
	if err != nil {
		return fail("proxy: %v", err)
	}
	go func() { _ = app.Serve(ln) }()
	defer func() { _ = app.Shutdown(2 * time.Second) }()
	client := &fasthttp.HostClient{Addr: proxyAddr, MaxConns: 256}
	get := func(path string) pickDNSSample {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://api" + path)
		s := pickDNSSample{start: time.Now()}
		s.err = client.DoTimeout(req, resp, pickDNSTimeout+time.Second)
		if s.err == nil && resp.StatusCode() != fasthttp.StatusOK {
			s.err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
		}
		if s.err == nil {
			s.site = string(resp.Body())
		}
		return s
	}
	status := func(ip string) (upstreampickcore.UpstreamStatus, bool) {
		for _, u := range picker.Status().Upstreams {
			if u.Server == pickDNSServer(ip) {
				return u, true
			}
		}
		return upstreampickcore.UpstreamStatus{}, false
	}
	measured := func(ips ...string) error {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			all := true
			for _, ip := range ips {
				u, ok := status(ip)
				all = all && ok && u.Sampled
			}
			if all {
				return nil
			}
		}
		return fmt.Errorf("%v not all measured within 20 s: %+v", ips, picker.Status())
	}
	if err := measured("127.0.0.1", "127.0.0.20", "127.0.0.50"); err != nil {
		return fail("%v", err)
	}

	// Workers send continuously, pausing a little so as not to load the machine more than needed.
	var (
		mu      sync.Mutex
		samples []pickDNSSample
		done    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				s := get("/")
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	// The watcher follows near1 through its drain.
	var removedAt, goneAt atomic.Pointer[time.Time]
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			u, ok := status("127.0.0.1")
			switch {
			case ok && u.Draining:
				mu.Lock()
				res.DrainingInFlight = max(res.DrainingInFlight, u.InFlight)
				mu.Unlock()
			case !ok && removedAt.Load() != nil && goneAt.Load() == nil:
				now := time.Now()
				goneAt.Store(&now)
			}
		}
	}()

	time.Sleep(4 * pickDNSInterval)
	added := time.Now()
	zone.SetAddrs("near.api.test", "127.0.0.1", "127.0.0.2")
	time.Sleep(4 * pickDNSInterval)
	if err := measured("127.0.0.2"); err != nil {
		close(done)
		return fail("after the add: %v", err)
	}

	res.RTTMillis, res.Tiers = map[string]float64{}, map[string]int{}
	for _, s := range pickDNSSites {
		u, _ := status(s.ip)
		res.RTTMillis[s.name], res.Tiers[s.name] = 1000*u.RTTSeconds, u.Tier
	}

	// Slow requests, until near1 has two of them in flight, then near1 leaves the A records.
	var slowWG sync.WaitGroup
	var slowAnswered atomic.Int64
	slowFailed := make(chan error, 64)
	for i := 0; i < 40 && slow[0].Load() < 2; i++ {
		slowWG.Go(func() {
			s := get("/slow")
			switch {
			case s.err != nil:
				slowFailed <- s.err
			case s.site == "near1":
				slowAnswered.Add(1)
			}
		})
		time.Sleep(20 * time.Millisecond)
	}
	removed := time.Now()
	removedAt.Store(&removed)
	zone.SetAddrs("near.api.test", "127.0.0.2")
	res.SlowOnNear1 = slow[0].Load()

	// Drained, near1 is forgotten; then it shuts down, as a replica removed from DNS would.
	for deadline := time.Now().Add(10 * time.Second); goneAt.Load() == nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	slowWG.Wait()
	_ = servers["near1"].Shutdown()
	time.Sleep(4 * pickDNSInterval)
	close(done)
	wg.Wait()
	<-watched
	close(slowFailed)

	res.SlowAnswered = int(slowAnswered.Load())
	for err := range slowFailed {
		res.Errors++
		res.FirstError = "slow request: " + err.Error()
	}
	if g := goneAt.Load(); g != nil {
		res.DrainedAfterMillis = pickDNSMillis(g.Sub(removed))
	}
	res.Before, res.Added, res.Removed = map[string]int{}, map[string]int{}, map[string]int{}
	res.AddedAfterMillis = -1
	for _, s := range samples {
		res.Requests++
		if s.err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = s.err.Error()
			}
			continue
		}
		switch {
		case s.start.Before(added):
			res.Before[s.site]++
		case s.start.Before(added.Add(2 * pickDNSInterval)):
		case s.start.Before(removed):
			res.Added[s.site]++
		case !s.start.Before(removed.Add((pickDNSRemoveAfter + 1) * pickDNSInterval)):
			res.Removed[s.site]++
		}
		if s.site == "near2" && (res.AddedAfterMillis < 0 || pickDNSMillis(s.start.Sub(added)) < res.AddedAfterMillis) {
			res.AddedAfterMillis = pickDNSMillis(s.start.Sub(added))
		}
		if s.site == "near1" && s.start.After(removed) {
			res.Near1AfterMillis = max(res.Near1AfterMillis, pickDNSMillis(s.start.Sub(removed)))
		}
	}
	res.Discovery = picker.Status().Discovery
	return res
}

func pickDNSMillis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
