package main

import (
	"reflect"
	"strings"
	"testing"
)

const readme = "# alpha\n\n## Install\n\n```sh\ngo get example.com/alpha/v3/x   # v3\ngo get example.com/alpha/x      # v2\n```\n\n" +
	"```go\nimport \"example.com/alpha/x\"\n```\n\n" +
	"```go\n// Quick start\npackage main\n\nfunc main() {}\n```\n\n```go\npackage main\n\nfunc second() {}\n```\n"

func TestProgram(t *testing.T) {
	got, err := Program(readme)
	if err != nil {
		t.Fatal(err)
	}
	if want := "// Quick start\npackage main\n\nfunc main() {}\n"; got != want {
		t.Fatalf("Program = %q, want %q", got, want)
	}
	if _, err := Program("```go\nimport \"x\"\n```\n```sh\npackage main\n```\n"); err == nil ||
		!strings.Contains(err.Error(), "no complete program") {
		t.Fatalf("a README without a program: %v", err)
	}
	if _, err := Program("```go\npackage main\n"); err == nil {
		t.Fatal("an unclosed block is no program")
	}
}

func TestGetLine(t *testing.T) {
	for path, want := range map[string][]string{
		"example.com/alpha/x":    {"go", "get", "example.com/alpha/x"},
		"example.com/alpha/v3/x": {"go", "get", "example.com/alpha/v3/x"},
	} {
		got, err := GetLine(readme, path)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GetLine(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	got, err := GetLine("go get example.com/alpha/x@v0.2.0\n", "example.com/alpha/x")
	if err != nil || got[2] != "example.com/alpha/x@v0.2.0" {
		t.Errorf("a pinned line: %q, %v", got, err)
	}
	// A longer path with the module's as prefix is another module's line.
	if _, err := GetLine("go get example.com/alpha/xy\n", "example.com/alpha/x"); err == nil ||
		!strings.Contains(err.Error(), "no `go get example.com/alpha/x` line") {
		t.Errorf("another module's line was taken: %v", err)
	}
}
