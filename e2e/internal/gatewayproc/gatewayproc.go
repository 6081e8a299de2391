// Package gatewayproc runs the demo gateway (examples/gateway) as a real process for end-to-end tests.
//
// Start builds the gateway once per test binary, starts it on a free 127.0.0.1 port with the given
// environment, and returns once it has announced its address. The process gets SIGTERM from t.Cleanup and is
// waited for; a gateway that does not stop within a few seconds is killed and the test fails. Gateway.Load runs
// the load driver (examples/load) against it, built the same way.
package gatewayproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// announce is the line the gateway logs once it listens: "fiberguard gateway on http://ADDR (...)".
const announce = "fiberguard gateway on http://"

// startTimeout bounds the wait for the announcement; the build has happened before it starts.
const startTimeout = 30 * time.Second

// builds holds the commands of examples built so far, by name; they live in one directory as long as the test
// binary.
var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
}

// binary builds examples/<name> (gateway, load) once and returns its path.
func binary(name string) (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if bin, ok := builds.bins[name]; ok {
		return bin, nil
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "fiberguard-examples-")
		if err != nil {
			return "", err
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	examples, err := examplesDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(builds.dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./"+name)
	cmd.Dir = examples
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/%s: %w\n%s", name, err, out)
	}
	builds.bins[name] = bin
	return bin, nil
}

// examplesDir finds the examples module from the working directory of whichever test package runs.
func examplesDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		candidate := filepath.Join(dir, "examples")
		if _, err := os.Stat(filepath.Join(candidate, "gateway", "main.go")); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("gatewayproc: no examples/gateway above the working directory")
		}
		dir = parent
	}
}

// Cleanup removes the built binaries; call it from TestMain after m.Run.
func Cleanup() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
}

// Load runs the load driver (examples/load) against g with args, as a user would in a second terminal, and
// returns what it printed (stdout, stderr) and its exit status. Its output is plain lines: it writes to a pipe.
func (g *Gateway) Load(t testing.TB, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := binary("load")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "FIBERGUARD_ADDR="+g.Addr)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run load: %v\n%s", err, errOut.String())
	}
	return out.String(), errOut.String(), code
}

// Gateway is a running gateway process.
type Gateway struct {
	// Addr is the host:port it listens on.
	Addr string
	// URL is "http://" + Addr.
	URL string

	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
}

// Log returns what the gateway has written so far.
func (g *Gateway) Log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

func (g *Gateway) write(line string) {
	g.mu.Lock()
	g.log.WriteString(line)
	g.log.WriteByte('\n')
	g.mu.Unlock()
}

// Start runs the gateway with env (KEY=VALUE pairs added to the test's environment) on a free port.
func Start(t testing.TB, env ...string) *Gateway {
	t.Helper()
	bin, err := binary("gateway")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), "FIBERGUARD_ADDR=127.0.0.1:0"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	g := &Gateway{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			g.write(line)
			if i := strings.Index(line, announce); i >= 0 {
				rest := line[i+len(announce):]
				if j := strings.IndexByte(rest, ' '); j >= 0 {
					rest = rest[:j]
				}
				select {
				case addr <- rest:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(g.done)
	}()
	t.Cleanup(func() { g.stop(t) })

	select {
	case a := <-addr:
		g.Addr, g.URL = a, "http://"+a
	case <-g.done:
		t.Fatalf("gateway exited before listening:\n%s", g.Log())
	case <-time.After(startTimeout):
		t.Fatalf("gateway did not announce its address within %v:\n%s", startTimeout, g.Log())
	}
	return g
}

func (g *Gateway) stop(t testing.TB) {
	select {
	case <-g.done:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
		t.Errorf("gateway did not stop within 10s of SIGTERM:\n%s", g.Log())
	}
}
