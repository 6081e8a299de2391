// Package haproxy runs a real HAProxy in front of test servers for end-to-end tests.
//
// Start launches the Debian `haproxy` binary as a plain foreground process with a generated configuration, on a
// free 127.0.0.1 port, in TCP mode: each client connection is relayed over one connection of its own to the
// server chosen for it, so a server that closes a keep-alive connection closes the client's, and the client's
// next connection is placed anew by the balancing algorithm. Servers are health-checked by connecting, so one
// that stops is taken out within a check interval, and a connection that fails to open is retried on another.
package haproxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/itest"
)

// Config configures Start.
type Config struct {
	// Servers are the host:port addresses balanced over. A server may be down at start and come up later.
	Servers []string
	// Balance is HAProxy's balancing algorithm. Optional. Default: "leastconn".
	Balance string
	// CheckInterval is the interval of the TCP health checks; one failure marks a server down, one success up.
	// Optional. Default: 250ms.
	CheckInterval time.Duration
}

// startTimeout bounds how long Start waits for HAProxy to accept connections (it does within ~100 ms here).
const startTimeout = 30 * time.Second

// Proxy is a running HAProxy process.
type Proxy struct {
	addr    string
	cmd     *exec.Cmd
	logPath string // HAProxy's stdout and stderr
	done    chan struct{}
	once    sync.Once
}

// Start runs HAProxy over cfg.Servers. It skips t (or fails it under FIBERGUARD_INTEGRATION=1) when the haproxy
// binary is missing, and fails t when the configuration is rejected or the proxy does not come up. t.Cleanup
// stops it.
func Start(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	bin := itest.RequireBinary(t, "haproxy")
	if len(cfg.Servers) == 0 {
		t.Fatal("haproxy: Config.Servers is empty")
	}
	if cfg.Balance == "" {
		cfg.Balance = "leastconn"
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = 250 * time.Millisecond
	}

	dir := t.TempDir()
	var lastErr error
	// A port picked by listening and closing can be taken before HAProxy binds it: retry rather than flake.
	for attempt := 0; attempt < 3; attempt++ {
		port, err := itest.FreePort()
		if err != nil {
			t.Fatalf("haproxy: pick a port: %v", err)
		}
		conf := filepath.Join(dir, "haproxy"+strconv.Itoa(attempt)+".cfg")
		if err := os.WriteFile(conf, []byte(configText(cfg, port)), 0o644); err != nil {
			t.Fatalf("haproxy: write config: %v", err)
		}
		if out, err := exec.Command(bin, "-c", "-f", conf).CombinedOutput(); err != nil {
			t.Fatalf("haproxy: config rejected: %v\n%s", err, out)
		}
		p, err := launch(bin, conf, "127.0.0.1:"+strconv.Itoa(port), filepath.Join(dir, "haproxy"+strconv.Itoa(attempt)+".log"))
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(p.Stop)
		return p
	}
	t.Fatalf("haproxy: did not start: %v", lastErr)
	return nil
}

// Addr is the host:port clients connect to.
func (p *Proxy) Addr() string { return p.addr }

// Log is what HAProxy wrote so far (warnings and alerts).
func (p *Proxy) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Stop terminates HAProxy and waits for it to exit. It is idempotent.
func (p *Proxy) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func launch(bin, conf, addr, logPath string) (*Proxy, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	p := &Proxy{addr: addr, logPath: logPath, done: make(chan struct{})}
	// -db: stay in the foreground, so the test owns the process.
	p.cmd = exec.Command(bin, "-db", "-f", conf)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()

	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("haproxy exited at start: %s", p.Log())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Stop()
	return nil, errors.New("haproxy did not accept connections within " + startTimeout.String() + ": " + p.Log())
}

// configText renders the configuration: TCP mode, one frontend, one backend with a health-checked server per
// address. retries with redispatch moves a connection that a just-stopped server refuses to another server.
func configText(cfg Config, port int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 4000
    nbthread 1

defaults
    mode tcp
    timeout connect 2s
    timeout client 5m
    timeout server 5m
    retries 3
    option redispatch 1

frontend clients
    bind 127.0.0.1:%d
    default_backend nodes

backend nodes
    balance %s
    default-server check inter %dms fall 1 rise 1
`, port, cfg.Balance, max(1, cfg.CheckInterval.Milliseconds()))
	for i, s := range cfg.Servers {
		fmt.Fprintf(&b, "    server node%d %s\n", i+1, s)
	}
	return b.String()
}
