package main

import (
	"bytes"
	"fmt"
	"io"
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
// handler, 2× capacity, no shedding and loadshed, 1 s runs): the test binary is re-executed as each app.
func TestRunTinyCell(t *testing.T) {
	requireCgroupV1(t)
	out := filepath.Join(t.TempDir(), "rows.tsv")
	p, err := parseFlags([]string{"-quotas", "1", "-gomaxprocs", "default", "-handlers", "cpu", "-loads", "2",
		"-modes", "plain,loadshed", "-duration", "1s", "-capacity-run", "1s", "-out", out}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run(p, &stdout); err != nil {
		t.Fatal(err)
	}
	text := stdout.String()
	for _, want := range []string{
		"| 1 CPU · GOMAXPROCS default · cpu | ",
		"| 1 CPU · GOMAXPROCS default · cpu | 2 | plain | ",
		"| 1 CPU · GOMAXPROCS default · cpu | 2 | loadshed | ",
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
