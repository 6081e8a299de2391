package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

// runMainEnv makes the test binary run the gateway's main instead of the tests, so that tests can watch the
// real command: its output, its exit status, its answer to SIGTERM.
const runMainEnv = "FIBERGUARD_GATEWAY_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// The worker-pool cleaner of a server that run stopped sleeps out MaxIdleWorkerDuration (10 s), then ends.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		// A HostClient's idle-connection cleaner ends once its idle period has passed after the last request.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	)
}

func newTestGateway(t *testing.T, vars map[string]string) *gateway {
	t.Helper()
	g, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	return g
}

func fetch(t *testing.T, g *gateway, path string) (int, string) {
	t.Helper()
	resp, err := g.app.Test(httptest.NewRequest("GET", path, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// statusParts fetches /status and returns each feature's part, and the whole body.
func statusParts(t *testing.T, g *gateway) (map[string]json.RawMessage, string) {
	t.Helper()
	code, body := fetch(t, g, "/status")
	if code != 200 {
		t.Fatalf("/status: %d %s", code, body)
	}
	var status map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, body)
	}
	return status, body
}

// statusOf decodes the named feature's part of /status into v and returns that part as it came.
func statusOf(t *testing.T, g *gateway, name string, v any) json.RawMessage {
	t.Helper()
	status, body := statusParts(t, g)
	part, ok := status[name]
	if !ok {
		t.Fatalf("/status lacks %q: %s", name, body)
	}
	if err := json.Unmarshal(part, v); err != nil {
		t.Fatalf("%s status %s: %v", name, part, err)
	}
	return part
}

func TestGatewayStatusShowsEveryFeature(t *testing.T) {
	g := newTestGateway(t, nil)
	if code, body := fetch(t, g, "/burn?ms=1"); code != 200 && code != 503 {
		t.Fatalf("/burn: %d %s", code, body)
	}
	status, body := statusParts(t, g)
	for _, f := range features() {
		if _, ok := status[f.name]; !ok {
			t.Errorf("/status lacks %q: %s", f.name, body)
		}
	}
	var ls struct {
		Load     *float64 `json:"load"`
		Admitted uint64   `json:"admitted"`
		Rejected uint64   `json:"rejected"`
		Signal   string   `json:"signal"`
	}
	if err := json.Unmarshal(status["loadshed"], &ls); err != nil || ls.Load == nil || ls.Signal == "" {
		t.Fatalf("loadshed status %s: %v", status["loadshed"], err)
	}
	if ls.Admitted+ls.Rejected == 0 {
		t.Fatalf("the /burn request was not counted: %s", status["loadshed"])
	}
}

func TestGatewayMetrics(t *testing.T) {
	g := newTestGateway(t, nil)
	code, body := fetch(t, g, "/metrics")
	if code != 200 || !strings.Contains(body, "fiberguard_loadshed_load") {
		t.Fatalf("/metrics: %d, loadshed metrics missing:\n%s", code, body)
	}
}

func TestBurnRejectsBadInput(t *testing.T) {
	// Dry-run: a busy test machine must not turn the answer under test into a 503.
	g := newTestGateway(t, map[string]string{"FIBERGUARD_LOADSHED_DRYRUN": "1"})
	if code, _ := fetch(t, g, "/burn?ms=abc"); code != 400 {
		t.Fatalf("/burn?ms=abc: %d, want 400", code)
	}
}

// announcement starts the line the gateway logs once it listens.
const announcement = "fiberguard gateway on http://"

// badAddrs returns addresses the gateway cannot listen on, by what is wrong with each; the busy one is held
// until the test ends.
func badAddrs(t *testing.T) map[string]string {
	t.Helper()
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() })
	return map[string]string{
		"garbage":            "missing port in address",
		"127.0.0.1:99999":    "invalid port",
		"127.0.0.1:-1":       "invalid port",
		busy.Addr().String(): "address already in use",
	}
}

func TestRunFailsToListenWithoutAnnouncing(t *testing.T) {
	for addr, why := range badAddrs(t) {
		var out bytes.Buffer
		err := run(t.Context(), func(k string) string {
			if k == "FIBERGUARD_ADDR" {
				return addr
			}
			return ""
		}, log.New(&out, "", 0))
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "FIBERGUARD_ADDR") {
			t.Errorf("run on %q: error %v, want one saying %q and naming FIBERGUARD_ADDR", addr, err, why)
		}
		if strings.Contains(out.String(), announcement) {
			t.Errorf("run on %q announced a gateway that never listened: %q", addr, out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// announcedAddr waits for the announcement in out and returns the address it gives.
func announcedAddr(t *testing.T, out func() string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, rest, ok := strings.Cut(out(), announcement); ok {
			if addr, _, ok := strings.Cut(rest, " "); ok {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no announcement in %q", out())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// getStatus fetches http://addr/status and returns its status code.
func getStatus(t *testing.T, addr string) int {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatalf("the announced gateway does not answer: %v", err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestRunAnnouncesTheAddressItListensOnAndStops(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, func(k string) string {
			if k == "FIBERGUARD_ADDR" {
				return "127.0.0.1:0"
			}
			return ""
		}, log.New(&out, "", 0))
	}()
	addr := announcedAddr(t, out.String)
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("announced %q, want the port actually bound", addr)
	}
	if code := getStatus(t, addr); code != 200 {
		t.Fatalf("/status: %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// gatewayCommand is this test binary running the gateway's main with FIBERGUARD_ADDR=addr and the given
// KEY=VALUE settings.
func gatewayCommand(t *testing.T, addr string, settings ...string) *exec.Cmd {
	t.Helper()
	// Not t.Context(): it ends before the cleanups that stop the gateway with SIGTERM run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1", "FIBERGUARD_ADDR="+addr), settings...)
	return cmd
}

// startGateway runs the gateway's main as a process on addr and returns the address it announced; the
// process gets SIGTERM when the test ends and must exit 0.
func startGateway(t *testing.T, addr string, settings ...string) string {
	t.Helper()
	cmd := gatewayCommand(t, addr, settings...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = out.Write(append(sc.Bytes(), '\n'))
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-copied
		if err := cmd.Wait(); err != nil {
			t.Errorf("gateway after SIGTERM: %v, want exit status 0\n%s", err, out.String())
		}
	})
	return announcedAddr(t, out.String)
}

func TestGatewayExitsNonZeroWhenItCannotListen(t *testing.T) {
	for addr, why := range badAddrs(t) {
		out, err := gatewayCommand(t, addr).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Errorf("gateway on %q: %v, want a non-zero exit status\n%s", addr, err, out)
		}
		if !bytes.Contains(out, []byte(why)) {
			t.Errorf("gateway on %q does not say %q:\n%s", addr, why, out)
		}
		if bytes.Contains(out, []byte(announcement)) {
			t.Errorf("gateway on %q announced itself though it never listened:\n%s", addr, out)
		}
	}
}

// The gateway, as main() runs it on a real socket, closes a connection whose request trickles in (a header
// line every 2 s) once ReadTimeout has passed, serves others meanwhile, and reads request heads up to
// ReadBufferSize: a 7 KB header is served, one larger than the buffer gets 431.
func TestGatewayServerLimits(t *testing.T) {
	addr := startGateway(t, "127.0.0.1:0", "FIBERGUARD_LOADSHED_DRYRUN=1")

	for size, want := range map[int]int{7 << 10: 200, readBufferSize + 1024: 431} {
		req, err := http.NewRequest("GET", "http://"+addr+"/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Large", strings.Repeat("a", size))
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("a %d-byte header: %v", size, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("a %d-byte header: %d, want %d", size, resp.StatusCode, want)
		}
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		// The server says nothing until it gives up on the request: then it closes (after a 408, or at once).
		_, _ = io.Copy(io.Discard, conn)
		closed <- time.Since(start)
	}()
	if _, err := io.WriteString(conn, "GET /status HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	limit := readTimeout + 5*time.Second
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case d := <-closed:
			if d < readTimeout-time.Second {
				t.Fatalf("the slow request was cut after %v, before ReadTimeout (%v)", d, readTimeout)
			}
			t.Logf("slow request cut after %v (ReadTimeout %v)", d.Round(time.Millisecond), readTimeout)
			return
		case <-tick.C:
			if time.Since(start) > limit {
				t.Fatalf("a request trickling a header line every 2 s is still open after %v", time.Since(start))
			}
			_, _ = fmt.Fprintf(conn, "X-Slow-%d: 1\r\n", i)
			// Another client is served meanwhile.
			if code := getStatus(t, addr); code != 200 {
				t.Fatalf("/status during the slow request: %d", code)
			}
		}
	}
}

// FIBERGUARD_ADDR may name an IPv6 address.
func TestGatewayListensOnIPv6(t *testing.T) {
	addr := startGateway(t, "[::1]:0")
	if !strings.HasPrefix(addr, "[::1]:") {
		t.Fatalf("announced %q, want [::1]:port", addr)
	}
	if code := getStatus(t, addr); code != 200 {
		t.Fatalf("/status over IPv6: %d", code)
	}
}

func TestGatewayExitsOnABadSetting(t *testing.T) {
	out, err := gatewayCommand(t, "127.0.0.1:0", "FIBERGUARD_LOADSHED_DRYRUN=maybe").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("gateway with FIBERGUARD_LOADSHED_DRYRUN=maybe: %v, want exit status 1\n%s", err, out)
	}
	want := `loadshed: FIBERGUARD_LOADSHED_DRYRUN must be 1, true, yes or on (or 0, false, no, off), got "maybe"`
	if !bytes.Contains(out, []byte(want)) || bytes.Contains(out, []byte(announcement)) {
		t.Errorf("gateway with FIBERGUARD_LOADSHED_DRYRUN=maybe says:\n%s\nwant %q and no announcement", out, want)
	}
}

// padded surrounds a setting with the spaces a shell file may leave around it.
func padded(v string) string { return " " + v + " " }

func TestDryRunAcceptsTheUsualBooleans(t *testing.T) {
	for value, want := range map[string]bool{
		"": false, "1": true, "true": true, "TRUE": true, "yes": true, "on": true, padded("Yes"): true,
		"0": false, "false": false, "no": false, "off": false,
	} {
		g := newTestGateway(t, map[string]string{"FIBERGUARD_LOADSHED_DRYRUN": value})
		var st struct {
			DryRun bool `json:"dry_run"`
		}
		statusOf(t, g, "loadshed", &st)
		if st.DryRun != want {
			t.Errorf("FIBERGUARD_LOADSHED_DRYRUN=%q: dry run %v, want %v", value, st.DryRun, want)
		}
		g.close()
	}
}

// The gateway exits with status 0 on SIGTERM: startGateway's cleanup sends it and checks the exit.
func TestGatewayStopsOnSIGTERM(t *testing.T) {
	addr := startGateway(t, "127.0.0.1:0")
	if code := getStatus(t, addr); code != 200 {
		t.Fatalf("/status: %d", code)
	}
}

func TestSetupErrorsNameTheFeatureOnce(t *testing.T) {
	for _, tt := range []struct{ key, value, want string }{
		{"FIBERGUARD_PROMETHEUS_URL", "bad", "rebalance: Config.PrometheusURL must be"},
		{"FIBERGUARD_UPSTREAMPICK_SERVERS", "ftp://127.0.0.1:1", "upstreampick: Config.Servers: "},
		{"FIBERGUARD_UPSTREAMPICK_SERVERS", "10.0.0.1", "upstreampick: Config.Servers: "},
		// An error of the gateway's own gets the feature's name.
		{"FIBERGUARD_UPSTREAMPICK_MODE", "fastest", "upstreampick: FIBERGUARD_UPSTREAMPICK_MODE must be"},
	} {
		_, err := newGateway(env{registry: prometheus.NewRegistry(), getenv: func(k string) string {
			if k == tt.key {
				return tt.value
			}
			return ""
		}})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s=%s: error %v, want %q...", tt.key, tt.value, err, tt.want)
			continue
		}
		name, _, _ := strings.Cut(tt.want, ":")
		if strings.Count(err.Error(), name+":") != 1 {
			t.Errorf("%s=%s: error %q names %s more than once", tt.key, tt.value, err, name)
		}
	}
}

func TestStatusIndentedForTerminals(t *testing.T) {
	g := newTestGateway(t, nil)
	for _, tc := range []struct {
		name, query, accept, agent string
		pretty                     bool
	}{
		{"program", "", "", "Go-http-client/1.1", false},
		{"browser", "", "text/html,application/xhtml+xml,*/*;q=0.8", "Mozilla/5.0", false},
		{"curl", "", "*/*", "curl/8.5.0", true},
		{"wget", "", "*/*", "Wget/1.21", true},
		{"curl asking for JSON", "", "application/json", "curl/8.5.0", false},
		{"?pretty", "?pretty", "application/json", "Go-http-client/1.1", true},
		{"?pretty=1", "?pretty=1", "", "", true},
		{"?pretty=0", "?pretty=0", "*/*", "curl/8.5.0", false},
		{"?pretty=false", "?pretty=false", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/status"+tc.query, nil)
			req.Header.Set("Accept", tc.accept)
			req.Header.Set("User-Agent", tc.agent)
			resp, err := g.app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if !json.Valid(body) {
				t.Fatalf("not JSON: %s", body)
			}
			if got := strings.Contains(string(body), "\n  \""); got != tc.pretty {
				t.Fatalf("indented = %v, want %v:\n%s", got, tc.pretty, body)
			}
		})
	}
}

func TestObservingAndDemoRoutes(t *testing.T) {
	app := fiber.New()
	app.Use(func(c *fiber.Ctx) error {
		return c.SendString(fmt.Sprintf("%v %v", observing(c), demoRoute(c)))
	})
	for path, want := range map[string]string{
		"/":               "true false",
		"/status":         "true false",
		"/status?pretty":  "true false",
		"/metrics":        "true false",
		"/live/data":      "true false",
		"/ui/app.js":      "true false",
		"/throttled?ms=5": "false true",
		"/proxy/hello":    "false true",
		"/burn?ms=5":      "false false",
		"/statusx":        "false false",
		"/proxyx":         "false false",
		"/livex":          "false false",
	} {
		resp, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("%s: observing, demo = %s, want %s", path, body, want)
		}
	}
}
