// Command testreport reads `go test -json` on stdin and prints what a plain `go test` prints: a line per
// package, and the output of failed tests and failed packages. Skipped tests, which a plain `go test` hides
// behind "ok", are appended with their output (the reason) to the file named by -skips, for a summary at the
// end of a run over several modules.
//
//	go test -json ./... | go run testreport.go -skips FILE
//
// It exits 1 when a package failed, so that a pipeline fails even without pipefail. Lines that are not JSON
// (a crash before the test binary ran) are printed as they come. Only the standard library is used, so it runs
// with `go run` outside any module.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is the part of a test2json event used here.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// pkg collects one package's events until it ends; packages of one run interleave.
type pkg struct {
	output []event
	result map[string]string // test → "pass", "skip" or "fail"
	skips  []string          // skipped tests, in order
}

func main() {
	skipsPath := flag.String("skips", "", "append each skipped test and its output to this file")
	flag.Parse()
	var skips io.Writer = io.Discard
	if *skipsPath != "" {
		f, err := os.OpenFile(*skipsPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		skips = f
	}
	out := bufio.NewWriter(os.Stdout)
	failed, err := report(os.Stdin, out, skips)
	_ = out.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// report reads test2json events from in, prints the plain report to out and the skipped tests to skips. It
// returns whether a package failed (or never ended).
func report(in io.Reader, out, skips io.Writer) (failed bool, err error) {
	pkgs := map[string]*pkg{}
	var order []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
			continue
		case e.Package == "":
			continue
		}
		p := pkgs[e.Package]
		if p == nil {
			p = &pkg{result: map[string]string{}}
			pkgs[e.Package] = p
			order = append(order, e.Package)
		}
		switch e.Action {
		case "output":
			p.output = append(p.output, e)
		case "pass", "skip", "fail":
			if e.Test != "" {
				p.result[e.Test] = e.Action
				if e.Action == "skip" {
					p.skips = append(p.skips, e.Test)
				}
				continue
			}
			failed = p.end(e.Package, e.Action == "fail", out, skips) || failed
			delete(pkgs, e.Package)
		}
	}
	// A package without an end: the run was cut short. Show all it said.
	for _, name := range order {
		if p := pkgs[name]; p != nil {
			p.end(name, true, out, skips)
			fmt.Fprintf(out, "FAIL\t%s [no result: the run ended early]\n", name)
			failed = true
		}
	}
	return failed, sc.Err()
}

// end prints a finished package: its result line when it passed; when it failed, its own output and that of
// every test that did not pass or skip. It writes its skipped tests to skips and returns fail.
func (p *pkg) end(name string, fail bool, out, skips io.Writer) bool {
	for _, e := range p.output {
		switch {
		case e.Test == "" && !fail:
			if strings.HasPrefix(e.Output, "ok") || strings.HasPrefix(e.Output, "?") {
				fmt.Fprint(out, e.Output)
			}
		case e.Test == "":
			fmt.Fprint(out, e.Output)
		case fail && p.result[e.Test] != "pass" && p.result[e.Test] != "skip" && !framing(e.Output):
			fmt.Fprint(out, e.Output)
		}
	}
	for _, test := range p.skips {
		fmt.Fprintf(skips, "--- SKIP: %s (%s)\n", test, name)
		for _, e := range p.output {
			if line := strings.TrimSpace(e.Output); e.Test == test && line != "" && !framing(e.Output) &&
				!strings.HasPrefix(line, "--- SKIP: ") {
				fmt.Fprintf(skips, "    %s\n", line)
			}
		}
	}
	return fail
}

// framing reports whether line is one of the testing package's progress lines.
func framing(line string) bool {
	line = strings.TrimSpace(line)
	for _, prefix := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS: "} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
