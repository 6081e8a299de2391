package promserver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestStartScrapesTargetAndStops proves the helper's contract: after Start returns, an instant query already
// sees the target's sample (no waiting in the caller), and after Stop the server no longer answers.
func TestStartScrapesTargetAndStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE promserver_test_gauge gauge\npromserver_test_gauge 42\n"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	s := Start(t, Config{Targets: []string{ln.Addr().String()}})
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL() = %q, want http://127.0.0.1:PORT", s.URL())
	}

	got := instantQuery(t, s.URL(), "promserver_test_gauge")
	if got != "42" {
		t.Fatalf("promserver_test_gauge = %q right after Start, want 42", got)
	}

	s.Stop()
	s.Stop() // idempotent
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(s.URL() + "/-/ready"); err == nil {
		resp.Body.Close()
		t.Fatalf("server still answers after Stop: %s", resp.Status)
	}
}

// TestStartOnTheGivenPort: a target that must be told Prometheus' address before Prometheus starts gets a
// server on exactly the port it was told.
func TestStartOnTheGivenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE promserver_test_gauge gauge\npromserver_test_gauge 7\n"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	s := Start(t, Config{Targets: []string{ln.Addr().String()}, Port: port})
	if want := "http://" + free.Addr().String(); s.URL() != want {
		t.Fatalf("URL() = %q, want %q", s.URL(), want)
	}
	if got := instantQuery(t, s.URL(), "promserver_test_gauge"); got != "7" {
		t.Fatalf("promserver_test_gauge = %q, want 7", got)
	}
}

func TestConfigYAML(t *testing.T) {
	got := configYAML(Config{Targets: []string{"127.0.0.1:1", "127.0.0.1:2"}, ScrapeInterval: 1500 * time.Millisecond})
	for _, want := range []string{"scrape_interval: 1500ms", `targets: ["127.0.0.1:1", "127.0.0.1:2"]`, "metrics_path: /metrics"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}

// instantQuery returns the value of the single sample q yields, or "" when the vector is empty.
func instantQuery(t *testing.T, base, q string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(q), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data.Result) == 0 {
		return ""
	}
	v, _ := out.Data.Result[0].Value[1].(string)
	return v
}
