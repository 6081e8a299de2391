package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTSVWriter(t *testing.T) {
	var buf bytes.Buffer
	w, err := newTSVWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := overloadRow()
	r.judged, r.missed = true, []string{"p99\t9×", "CPU\n0.5"} // a tab or newline must not break the line
	if err := w.add(r); err != nil {
		t.Fatal(err)
	}
	s := overloadRow()
	s.load, s.mode, s.firstShed, s.stepP99, s.unloadedP99 = loadStep, "plain", 42*time.Millisecond, 0, 0
	s.dropShed, s.lastShed = 0.125, 1300*time.Millisecond
	if err := w.add(s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want a header and 2 rows:\n%s", len(lines), buf.String())
	}
	header := strings.Split(lines[0], "\t")
	if strings.Join(header, ",") != strings.Join(tsvColumns, ",") {
		t.Fatalf("header %q", header)
	}
	rows := make([]map[string]string, 2)
	for i, line := range lines[1:] {
		f := strings.Split(line, "\t")
		if len(f) != len(header) {
			t.Fatalf("row %d: %d fields, want %d: %q", i, len(f), len(header), line)
		}
		rows[i] = map[string]string{}
		for j, h := range header {
			rows[i][h] = f[j]
		}
	}
	for col, want := range map[string]string{"quota": "1", "gomaxprocs": "default", "handler": "cpu", "neighbours": "false",
		"load": "2", "factor": "2", "mode": "loadshed", "capacity_rps": "1000", "offered_rps": "2000", "goodput_rps": "850",
		"goodput_per_capacity": "0.85", "total": "20000", "ok": "8500", "shed": "11500", "timeouts": "0", "shed_frac": "0.575",
		"p99_ms": "50", "unloaded_p99_ms": "10", "p99_ratio": "5", "cpu_cores": "0.9", "cpu_reach": "1", "cpu_frac": "0.9",
		"first_shed_ms": "", "drop_shed_frac": "", "drop_last_shed_ms": "", "goals_missed": "p99 9×; CPU 0.5"} {
		if got := rows[0][col]; got != want {
			t.Errorf("row 0, %s: %q, want %q", col, got, want)
		}
	}
	for col, want := range map[string]string{"load": "step", "mode": "plain", "first_shed_ms": "42", "step_p99_ms": "",
		"drop_shed_frac": "0.125", "drop_last_shed_ms": "1300",
		"p99_ratio": "", "unloaded_p99_ms": "", "goals_missed": ""} {
		if got := rows[1][col]; got != want {
			t.Errorf("row 1, %s: %q, want %q", col, got, want)
		}
	}
}
