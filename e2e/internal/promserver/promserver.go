// Package promserver runs a real Prometheus server for end-to-end tests.
//
// Start launches the Debian `prometheus` binary on a free 127.0.0.1 port with its configuration and TSDB under
// t.TempDir(), scraping the given targets' /metrics, and returns once the server is ready and every target has
// been scraped successfully at least once, so an instant query made right after Start sees data. The server is
// stopped by t.Cleanup; Stop may also be called earlier (for example to test what happens when Prometheus goes
// away) and is idempotent.
package promserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/itest"
)

// Config configures Start.
type Config struct {
	// Targets are host:port addresses scraped at /metrics.
	Targets []string
	// ScrapeInterval is the scrape (and rule evaluation) interval. Optional. Default: 1s.
	ScrapeInterval time.Duration
	// Port is the port to listen on, for a target that must know Prometheus' address before Prometheus starts.
	// Optional. Default: 0 (a free port, picked again when the one picked is taken first).
	Port int
}

// startTimeout bounds how long Start waits for readiness and the first scrape of every target. Prometheus 2.42
// is ready within ~1 s here and scrapes a target within one interval after that; 60 s leaves room for a
// loaded CI machine without letting a broken setup hang the suite.
const startTimeout = 60 * time.Second

// Server is a running Prometheus process.
type Server struct {
	url  string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	once sync.Once
}

// Start runs Prometheus scraping cfg.Targets. It skips t (or fails it under FIBERGUARD_INTEGRATION=1) when the
// prometheus binary is missing, and fails t when the server does not come up or a target is never scraped.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin := itest.RequireBinary(t, "prometheus")
	if cfg.ScrapeInterval <= 0 {
		cfg.ScrapeInterval = time.Second
	}

	dir := t.TempDir()
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(configYAML(cfg)), 0o644); err != nil {
		t.Fatalf("promserver: write config: %v", err)
	}

	// A port picked by listening and closing can be taken again before Prometheus binds it; retry a few
	// times on a start failure rather than flake.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := cfg.Port, error(nil)
		if port == 0 {
			port, err = itest.FreePort()
		} else if attempt > 0 {
			break // the port asked for is taken
		}
		if err != nil {
			t.Fatalf("promserver: pick a port: %v", err)
		}
		s, err := launch(bin, confPath, filepath.Join(dir, "data"+strconv.Itoa(attempt)), port)
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(s.Stop)
		if err := s.waitReady(cfg.Targets); err != nil {
			lastErr = err
			s.Stop()
			if s.exitedEarly() {
				continue // most likely the port was taken; try another one
			}
			t.Fatalf("promserver: %v\nprometheus log:\n%s", err, s.logTail())
		}
		return s
	}
	t.Fatalf("promserver: prometheus did not start: %v", lastErr)
	return nil
}

// URL is the server's base address, http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.url }

// Stop kills the process and waits for it to exit. It is idempotent and safe to call concurrently.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
		}
		<-s.done
	})
}

func launch(bin, confPath, dataDir string, port int) (*Server, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin,
		"--config.file="+confPath,
		"--storage.tsdb.path="+dataDir,
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	buf := &syncBuffer{}
	cmd.Stdout = buf
	cmd.Stderr = buf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{url: "http://" + addr, cmd: cmd, log: buf, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

func (s *Server) exitedEarly() bool {
	select {
	case <-s.done:
		return s.cmd.ProcessState != nil && !s.cmd.ProcessState.Success() && strings.Contains(s.logTail(), "address already in use")
	default:
		return false
	}
}

func (s *Server) logTail() string {
	out := s.log.String()
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return out
}

// waitReady polls /-/ready, then /api/v1/targets until every target reports health "up".
func (s *Server) waitReady(targets []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		select {
		case <-s.done:
			return errors.New("prometheus exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %s", startTimeout, last)
		case <-tick.C:
		}
		ok, why := s.targetsUp(ctx, client, targets)
		if ok {
			return nil
		}
		last = why
	}
}

type targetsResponse struct {
	Status string `json:"status"`
	Data   struct {
		ActiveTargets []struct {
			ScrapeURL  string `json:"scrapeUrl"`
			Health     string `json:"health"`
			LastError  string `json:"lastError"`
			LastScrape string `json:"lastScrape"`
		} `json:"activeTargets"`
	} `json:"data"`
}

func (s *Server) targetsUp(ctx context.Context, client *http.Client, targets []string) (bool, string) {
	resp, err := get(ctx, client, s.url+"/-/ready")
	if err != nil {
		return false, "ready: " + err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, "ready: " + resp.Status
	}
	resp, err = get(ctx, client, s.url+"/api/v1/targets?state=active")
	if err != nil {
		return false, "targets: " + err.Error()
	}
	defer resp.Body.Close()
	var tr targetsResponse
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return false, "targets: " + err.Error()
	}
	health := make(map[string]string, len(tr.Data.ActiveTargets))
	for _, at := range tr.Data.ActiveTargets {
		health[at.ScrapeURL] = at.Health + " " + at.LastError
	}
	for _, target := range targets {
		h := health["http://"+target+"/metrics"]
		if !strings.HasPrefix(h, "up") {
			return false, fmt.Sprintf("target %s not scraped yet (%q)", target, h)
		}
	}
	return true, ""
}

func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

func configYAML(cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n  scrape_timeout: %s\n",
		promDuration(cfg.ScrapeInterval), promDuration(cfg.ScrapeInterval), promDuration(cfg.ScrapeInterval))
	b.WriteString("scrape_configs:\n  - job_name: fiberguard\n    metrics_path: /metrics\n    static_configs:\n      - targets: [")
	for i, t := range cfg.Targets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(t))
	}
	b.WriteString("]\n")
	return b.String()
}

// promDuration renders d in Prometheus' duration syntax (whole milliseconds).
func promDuration(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// syncBuffer collects the process output; exec copies stdout and stderr from separate goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
