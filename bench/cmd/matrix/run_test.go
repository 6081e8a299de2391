package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
)

// requireCgroupV1 skips a test that needs root and the cgroup v1 cpu and cpuacct controllers, or fails it when
// FIBERGUARD_INTEGRATION=1.
func requireCgroupV1(t *testing.T) {
	t.Helper()
	err := scenario.CheckCgroupV1()
	if err == nil {
		return
	}
	if os.Getenv("FIBERGUARD_INTEGRATION") == "1" {
		t.Fatalf("integration prerequisite missing: %v (FIBERGUARD_INTEGRATION=1)", err)
	}
	t.Skipf("skipping: %v; set FIBERGUARD_INTEGRATION=1 to make this a failure", err)
}

// TestRunTinyCell runs the command's cell loop for real on one tiny cell (a 1-CPU group, Go's GOMAXPROCS, the cpu
// handler, 2× capacity, no shedding and loadshed, 1 s runs) for each framework: the test binary is re-executed as
// each app.
func TestRunTinyCell(t *testing.T) {
	requireCgroupV1(t)
	for _, tc := range []struct{ framework, cell string }{
		{"fiber", "1 CPU · GOMAXPROCS default · cpu"},
		{"nethttp", "1 CPU · GOMAXPROCS default · cpu · net/http"},
	} {
		t.Run(tc.framework, func(t *testing.T) { runTinyCell(t, tc.framework, tc.cell) })
	}
}

func runTinyCell(t *testing.T, framework, cellName string) {
	out := filepath.Join(t.TempDir(), "rows.tsv")
	p, err := parseFlags([]string{"-framework", framework, "-quotas", "1", "-gomaxprocs", "default", "-handlers", "cpu",
		"-loads", "2", "-modes", "plain,loadshed", "-duration", "1s", "-capacity-run", "1s", "-out", out}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run(p, &stdout); err != nil {
		t.Fatal(err)
	}
	text := stdout.String()
	for _, want := range []string{
		"| " + cellName + " | ",
		"| " + cellName + " | 2 | plain | ",
		"| " + cellName + " | 2 | loadshed | ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output has no line starting %q:\n%s", want, text)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("TSV: %d lines, want a header and 2 rows:\n%s", len(lines), data)
	}
	for i, mode := range []string{"plain", "loadshed"} {
		f := strings.Split(lines[i+1], "\t")
		if len(f) != len(tsvColumns) || f[6] != mode || f[7] == "0" || f[11] == "0" {
			t.Errorf("TSV row %d: %q, want mode %s, a capacity and requests", i+1, f, mode)
		}
		if judgedRow := f[len(f)-1] != ""; judgedRow != (mode == "loadshed") {
			t.Errorf("TSV row %d: goals %q; want goals on loadshed's row only", i+1, f[len(f)-1])
		}
	}
	// The groups went with the run.
	for _, ctrl := range []string{"cpu", "cpuacct"} {
		left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/%s/*/fiberguard-matrix-%d-*", ctrl, os.Getpid()))
		more, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/%s/fiberguard-matrix-%d-*", ctrl, os.Getpid()))
		if len(left)+len(more) > 0 {
			t.Errorf("groups left: %q %q", left, more)
		}
	}
}

// TestServe starts the app process as the driver does (the test binary re-executed with -serve), outside any
// group, for each framework: it serves GET /work and loadshed's GET /stats, and answers a path it does not route
// as its framework does, which shows the -framework flag reached the app.
func TestServe(t *testing.T) {
	for _, tc := range []struct{ framework, notFound string }{
		{"fiber", "Cannot GET /nope"},
		{"nethttp", "404 page not found\n"},
	} {
		t.Run(tc.framework, func(t *testing.T) {
			a, err := scenario.StartApp(scenario.AppOptions{Args: appArgs(tc.framework, "loadshed", "cpu", "default", 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Stop()
			get := func(path string) (int, string) {
				resp, err := http.Get(a.Base + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, string(body)
			}
			if code, body := get("/work"); code != http.StatusOK || len(body) != 4 {
				t.Errorf("GET /work: %d %q, want 200 and 4 bytes", code, body)
			}
			var status struct{ Name string }
			if err := a.GetJSON("/stats", &status); err != nil || status.Name != "default" {
				t.Errorf("GET /stats: %+v, %v; want loadshed's Status", status, err)
			}
			if code, body := get("/nope"); code != http.StatusNotFound || body != tc.notFound {
				t.Errorf("GET /nope: %d %q, want 404 %q", code, body, tc.notFound)
			}
		})
	}
}
