package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/gatewayproc"
	"github.com/fiberguard/fiberguard/e2e/internal/itest"
	"github.com/fiberguard/fiberguard/e2e/internal/promserver"
)

// dashboardPath is the Grafana dashboard the repository ships.
var dashboardPath = filepath.Join("..", "dashboards", "fiberguard.json")

// libraryReadmes document every metric each module exports, in a "Metrics" table.
var libraryReadmes = []string{"loadshed", "throttle", "upstreampick", "rebalance"}

var metricName = regexp.MustCompile(`\bfiberguard_[a-z0-9_]+\b`)

// grafanaDashboard is the part of Grafana's dashboard model the test reads.
type grafanaDashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	Type       string                  `json:"type"`
	Title      string                  `json:"title"`
	Datasource any                     `json:"datasource"`
	Targets    []struct{ Expr string } `json:"targets"`
	Panels     []grafanaPanel          `json:"panels"` // a collapsed row holds its panels
}

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// dashboardQuery is one panel expression, with where it was found.
type dashboardQuery struct {
	row, panel, expr string
}

// queries lists every panel expression under its row, in dashboard order.
func (d grafanaDashboard) queries() []dashboardQuery {
	var out []dashboardQuery
	row := ""
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				row = p.Title
				walk(p.Panels)
				continue
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) != "" {
					out = append(out, dashboardQuery{row, p.Title, tg.Expr})
				}
			}
		}
	}
	walk(d.Panels)
	return out
}

// TestDashboardShape checks what Grafana needs to import the dashboard: a title and uid, the Prometheus
// datasource and the instance name as variables used by every panel, and one row per module.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Fatalf("title %q, uid %q: both are needed to import", d.Title, d.UID)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("templating lacks a datasource variable named datasource: %v", vars)
	}
	if vars["name"] != "query" {
		t.Errorf("templating lacks a query variable named name (the instances' Name label): %v", vars)
	}
	rows := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			rows[p.Title] = true
		}
	}
	for _, m := range libraryReadmes {
		if !rows[m] {
			t.Errorf("no row titled %q; rows: %v", m, rows)
		}
	}
	var check func(ps []grafanaPanel)
	check = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				check(p.Panels)
				continue
			}
			if ds, _ := json.Marshal(p.Datasource); !strings.Contains(string(ds), "${datasource}") {
				t.Errorf("panel %q: datasource %s is not the ${datasource} variable", p.Title, ds)
			}
			for _, tg := range p.Targets {
				if strings.Contains(tg.Expr, "fiberguard_") && !strings.Contains(tg.Expr, `name=~"$name"`) {
					t.Errorf("panel %q: %s does not select name=~\"$name\"", p.Title, tg.Expr)
				}
			}
		}
	}
	check(d.Panels)
	if len(d.queries()) == 0 {
		t.Fatal("no panel has a query")
	}
}

// documentedFamilies returns the fiberguard_* names in the modules' README Metrics sections.
func documentedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range libraryReadmes {
		raw, err := os.ReadFile(filepath.Join("..", m, "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		section := metricsSection(string(raw))
		if section == "" {
			t.Fatalf("%s/README.md has no \"## Metrics\" section", m)
		}
		for _, name := range metricName.FindAllString(section, -1) {
			out[name] = true
		}
	}
	return out
}

// metricsSection is the text from a "## Metrics" heading to the next "## " heading.
func metricsSection(readme string) string {
	i := strings.Index(readme, "\n## Metrics")
	if i < 0 {
		return ""
	}
	rest := readme[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

// exportedFamilies scrapes url and returns the suite's fiberguard_* families by type.
func exportedFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// fiberguard_gateway_* are the demo's own metrics, not the suite's.
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "fiberguard_") &&
			!strings.HasPrefix(f[2], "fiberguard_gateway_") {
			out[f[2]] = f[3]
		}
	}
	return out
}

// family strips the series suffixes of histograms and summaries.
func family(name string, known map[string]bool) string {
	if known[name] {
		return name
	}
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, s); ok && known[base] {
			return base
		}
	}
	return name
}

// expand replaces Grafana's variables with what a dashboard viewer would run.
func expand(expr string) string {
	return strings.NewReplacer(
		"$__rate_interval", "1m", "${__rate_interval}", "1m",
		"$__interval", "15s", "${__interval}", "15s",
		"$__range", "5m", "${__range}", "5m",
		`"$name"`, `".*"`, `"${name}"`, `".*"`,
	).Replace(expr)
}

// TestDashboardAgainstRealPrometheus runs every panel expression of the dashboard against a real Prometheus
// scraping the demo gateway (every module on, rebalance and the throttle reading that Prometheus) under load.
// It fails on a PromQL error, on a metric name the suite does not export, and on an exported or documented
// fiberguard_* family that no panel shows.
func TestDashboardAgainstRealPrometheus(t *testing.T) {
	itest.RequireBinary(t, "prometheus")
	promPort, err := itest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	g := gatewayproc.Start(t, "FIBERGUARD_PROMETHEUS_URL="+promURL)
	prom := promserver.Start(t, promserver.Config{Targets: []string{g.Addr}, Port: promPort})

	driveGateway(t, g.URL, 6*time.Second)
	time.Sleep(3 * time.Second) // two scrapes after the load

	known := documentedFamilies(t)
	exported := exportedFamilies(t, g.URL+"/metrics")
	for name := range exported {
		known[name] = true
	}
	for _, name := range []string{"fiberguard_loadshed_load", "fiberguard_throttle_window", "fiberguard_rebalance_open_connections"} {
		if _, ok := exported[name]; !ok {
			t.Errorf("the gateway does not export %s: the setup is not what this test means to check", name)
		}
	}

	shown := map[string]bool{}
	d := loadDashboard(t)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, q := range d.queries() {
		where := q.row + " / " + q.panel
		for _, name := range metricName.FindAllString(q.expr, -1) {
			f := family(name, known)
			if !known[f] {
				t.Errorf("%s: %s is not a metric the suite exports or documents", where, name)
			}
			shown[f] = true
		}
		n, err := instantQueryCount(client, prom.URL(), expand(q.expr))
		if err != nil {
			t.Errorf("%s: %s: %v", where, q.expr, err)
			continue
		}
		t.Logf("%-45s %3d series  %s", where, n, q.expr)
	}
	var missing []string
	for name := range known {
		if !shown[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no panel shows %s", strings.Join(missing, ", "))
	}
}

// instantQueryCount runs expr as an instant query and returns the number of series (or 1 for a scalar).
func instantQueryCount(client *http.Client, base, expr string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/query", nil)
	if err != nil {
		return 0, err
	}
	qs := req.URL.Query()
	qs.Set("query", expr)
	req.URL.RawQuery = qs.Encode()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		return 0, fmt.Errorf("%s: %s", resp.Status, raw)
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("%s: %s", body.ErrorType, body.Error)
	}
	if body.Data.ResultType != "vector" && body.Data.ResultType != "matrix" {
		return 1, nil
	}
	var series []json.RawMessage
	if err := json.Unmarshal(body.Data.Result, &series); err != nil {
		return 0, err
	}
	return len(series), nil
}

// driveGateway drives every demo route open loop for d, as `go run ./examples/load` does: CPU work at 1.5 times
// what the machine's CPUs can serve, the throttled backend past its 400/s, and proxied requests. Requests are sent
// on schedule whatever the answers' latency; one due while 512 are in flight is not sent.
func driveGateway(t *testing.T, base string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	defer client.CloseIdleConnections()
	slots := make(chan struct{}, 512)
	var wg sync.WaitGroup
	for _, route := range []struct {
		path string
		rate int
	}{{"/burn?ms=5", 300 * runtime.NumCPU()}, {"/throttled?ms=20", 500}, {"/proxy/hello", 100}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(route.rate))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				select {
				case slots <- struct{}{}:
				default:
					continue // the bound is hit: skip this one rather than fall behind
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-slots }()
					req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+route.path, nil)
					resp, err := client.Do(req)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}()
			}
		}()
	}
	wg.Wait()
}
