package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// runMainEnv makes the test binary run the command's main with the JSON-encoded arguments it holds, so that
// tests can watch the real command: its exit status and its answer to Ctrl-C.
const runMainEnv = "FIBERGUARD_LOAD_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(runMainEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Args = append(os.Args[:1], a...)
		main()
		return
	}
	goleak.VerifyTestMain(m,
		// A HostClient's connection cleaner sleeps out MaxIdleConnDuration after its last connection closed, then ends.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	)
}

// testServer answers like the gateway's modules do, by path, and counts the requests it gets by path and query.
type testServer struct {
	*httptest.Server
	release chan struct{}
	mu      sync.Mutex
	hits    map[string]int
}

func startTestServer(t *testing.T) *testServer {
	t.Helper()
	s := &testServer{release: make(chan struct{}), hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.RequestURI]++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/", "/ok":
			_, _ = io.WriteString(w, "ok\n")
		case "/shed":
			w.Header().Set("Fiberguard-Rejected-By", "loadshed/default")
			http.Error(w, "loadshed: overloaded, retry later", http.StatusServiceUnavailable)
		case "/throttled":
			w.Header().Set("Fiberguard-Rejected-By", "throttle/gateway")
			http.Error(w, "throttle: concurrency limit reached, retry later", http.StatusServiceUnavailable)
		case "/busy":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-s.release:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

func (s *testServer) hitsOf(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[uri]
}

func noEnv(string) string { return "" }

// runCommand runs the command as main would, with line output, and returns its exit status and output.
func runCommand(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	code = run(ctx, args, noEnv, &out, &errOut, false)
	return code, out.String(), errOut.String()
}

// sumLines adds up the numeric fields of the per-interval lines, by route.
func sumLines(t *testing.T, out string) map[string]map[string]int {
	t.Helper()
	sums := map[string]map[string]int{}
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "t=") {
			continue
		}
		fields := strings.Fields(line)
		path, ok := strings.CutPrefix(fields[1], "route=")
		if !ok {
			t.Fatalf("no route in %q", line)
		}
		if sums[path] == nil {
			sums[path] = map[string]int{}
		}
		for _, f := range fields[2:] {
			k, v, _ := strings.Cut(f, "=")
			if n, err := strconv.Atoi(v); err == nil && k != "rate" {
				sums[path][k] += n
			}
		}
	}
	return sums
}

// Against a real server on 127.0.0.1: every request due is sent, and each answer lands in its column.
func TestRunAgainstARealServer(t *testing.T) {
	srv := startTestServer(t)
	code, out, errOut := runCommand(context.Background(), "-target", srv.URL, "-duration", "1s", "-timeout", "10s",
		"-r", "40:/ok?a=1&b=x:y=z", "-r", "30:/shed", "-r", "20:/throttled", "-r", "10:/busy", "-r", "10:/missing")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	sums := sumLines(t, out)
	zero := map[string]int{"sent": 0, "ok": 0, "rejected.loadshed": 0, "rejected.throttle": 0, "503.other": 0,
		"status.other": 0, "errors": 0, "timeouts": 0, "dropped": 0}
	for _, tc := range []struct {
		path   string
		column string
		n      int
	}{
		{"/ok?a=1&b=x:y=z", "ok", 40}, {"/shed", "rejected.loadshed", 30}, {"/throttled", "rejected.throttle", 20},
		{"/busy", "503.other", 10}, {"/missing", "status.other", 10},
	} {
		want := map[string]int{}
		for k, v := range zero {
			want[k] = v
		}
		want["sent"], want[tc.column] = tc.n, tc.n
		got := sums[tc.path]
		delete(got, "inflight")
		if len(got) != len(want) {
			t.Errorf("%s: columns %v, want %v", tc.path, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %d, want %d (all: %v)", tc.path, k, got[k], v, got)
			}
		}
		// The server got each request once, with its query as written.
		if hits := srv.hitsOf(tc.path); hits != tc.n {
			t.Errorf("%s: the server got %d requests, want %d", tc.path, hits, tc.n)
		}
	}
	if hits := srv.hitsOf("/"); hits != 1 {
		t.Errorf("the reachability check sent %d requests, want 1", hits)
	}
	for _, want := range []string{
		"load: " + srv.URL + " for 1s: 40/s /ok?a=1&b=x:y=z, 30/s /shed, 20/s /throttled, 10/s /busy, 10/s /missing",
		"summary: " + srv.URL + ", for 1s,",
		"other statuses /missing: 404 ×10\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	row := summaryRow(t, out, "all")
	for col, want := range map[string]string{"sent": "110", "200": "40 (36%)", "loadshed": "30 (27%)",
		"throttle": "20 (18%)", "503 other": "10 (9%)", "other": "10 (9%)", "errors": "0", "dropped": "0"} {
		if row[col] != want {
			t.Errorf("summary, all routes: %s = %q, want %q (%v)", col, row[col], want, row)
		}
	}
}

// summaryRow reads the summary's row for route by its header's column names.
func summaryRow(t *testing.T, out, route string) map[string]string {
	t.Helper()
	var header []string
	for line := range strings.Lines(out) {
		cells := splitCells(line)
		if len(cells) > 0 && cells[0] == "route" {
			header = cells
		}
		if header != nil && len(cells) == len(header) && cells[0] == route {
			row := map[string]string{}
			for i, h := range header {
				row[h] = cells[i]
			}
			return row
		}
	}
	t.Fatalf("no summary row for %s:\n%s", route, out)
	return nil
}

// splitCells splits a table line at runs of two spaces or more; a cell holds single spaces at most.
func splitCells(line string) []string {
	var cells []string
	for _, c := range strings.Split(strings.TrimSpace(line), "  ") {
		if c = strings.TrimSpace(c); c != "" {
			cells = append(cells, c)
		}
	}
	return cells
}

// A server that never answers gets timeouts, each after -timeout, and the run still ends.
func TestRunCountsTimeouts(t *testing.T) {
	srv := startTestServer(t)
	start := time.Now()
	code, out, errOut := runCommand(context.Background(), "-target", srv.URL, "-duration", "500ms", "-timeout", "100ms",
		"-r", "10:/hang")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if got := sumLines(t, out)["/hang"]; got["sent"] != 5 || got["timeouts"] != 5 || got["ok"] != 0 || got["errors"] != 0 {
		t.Fatalf("/hang: %v; want 5 sent, 5 timeouts", got)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the run took %v", took)
	}
}

func TestRunSaysHowToStartTheGatewayWhenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"-target", "http://" + addr}},
		{env: map[string]string{"FIBERGUARD_ADDR": addr}},
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, &out, &errOut, false)
		if code != exitUnreachable {
			t.Errorf("%v %v: exit %d, want %d", tc.args, tc.env, code, exitUnreachable)
		}
		for _, want := range []string{"cannot reach http://" + addr + " (", "connection refused",
			"Start it with: go run ./examples/gateway"} {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("%v %v: stderr lacks %q: %q", tc.args, tc.env, want, errOut.String())
			}
		}
		if out.Len() != 0 {
			t.Errorf("stdout: %q", out.String())
		}
	}
}

func TestRunRejectsABadCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"-r", "-1:/x"}, {"-r", "0:/x"}, {"-duration", "0s"}, {"-target", "127.0.0.1:8080"}, {"-nope"},
		{"-duration", "soon"}, {"stray"},
	} {
		code, out, errOut := runCommand(context.Background(), args...)
		if code != exitUsage || !strings.HasPrefix(errOut, "load: ") || !strings.HasSuffix(errOut, "run with -h for usage\n") ||
			out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and a message", args, code, out, errOut, exitUsage)
		}
	}
	code, out, errOut := runCommand(context.Background(), "-h")
	if code != exitOK || !strings.Contains(out, "Usage: go run ./examples/load") || errOut != "" {
		t.Errorf("-h: exit %d, stderr %q, stdout %q", code, errOut, out)
	}
}

func TestRunStopsWhenInterrupted(t *testing.T) {
	srv := startTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	code, out, _ := runCommand(ctx, "-target", srv.URL, "-duration", "1m", "-r", "50:/ok")
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("took %v after an interrupt at 300ms", took)
	}
	got := sumLines(t, out)["/ok"]
	if got["sent"] < 1 || got["sent"] >= 3000 || got["ok"] != got["sent"] {
		t.Fatalf("/ok: %v; want some sent, every one answered", got)
	}
	if !strings.Contains(out, "summary: "+srv.URL+", interrupted,") {
		t.Fatalf("the summary does not say the run was interrupted:\n%s", out)
	}
}

// The real command, as a child: Ctrl-C stops the sending, prints the summary and exits 130.
func TestMainExitsOnCtrlCWithASummary(t *testing.T) {
	srv := startTestServer(t)
	args, _ := json.Marshal([]string{"-target", srv.URL, "-duration", "1m", "-r", "20:/ok"})
	// Killed if it outlives the test's patience, so that a failure never leaves a child sending for a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"="+string(args))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var out strings.Builder
	interrupted := false
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		// Once it reports its first second, as a user pressing Ctrl-C while watching.
		if !interrupted && strings.HasPrefix(lines.Text(), "t=") {
			interrupted = true
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want status %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "summary: "+srv.URL+", interrupted,") {
		t.Fatalf("no summary:\n%s", out.String())
	}
}
