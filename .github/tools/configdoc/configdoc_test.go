package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const coreSrc = `package core

// Config is the settings.
type Config[C, H any] struct {
	// Next skips the middleware.
	//
	// Optional. Default: nil
	Next func(c C) bool

	// Lower and Upper bound the band.
	//
	// Optional. Default: 0.9 and 0.95
	Lower, Upper float64

	// OnReject answers a rejection: a long default wraps under its item, so the comment keeps to 120 columns and
	// the list reads in go doc.
	//
	// Optional. Default: 503 with a body that says in many words that the server is overloaded and that the
	// client should retry later
	OnReject H
}
`

const adapterSrc = `package x

// Config is stale.
type Config = core.Config[*fiber.Ctx, fiber.Handler]

var ConfigDefault = Config{}
`

func TestRewriteListsEveryFieldWithItsVersionsTypeAndDefault(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.go"), []byte(coreSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	fields, params, err := CoreFields(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(params, ",") != "C,H" || len(fields) != 4 {
		t.Fatalf("params %v, fields %+v; want C,H and 4 fields", params, fields)
	}
	out, err := Rewrite([]byte(adapterSrc), fields, params)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"//   - Next func(c *fiber.Ctx) bool: nil\n",
		"//   - Lower float64: 0.9 and 0.95\n",
		"//   - Upper float64: 0.9 and 0.95\n",
		"//   - OnReject fiber.Handler: 503 with a body",
		"type Config = core.Config[*fiber.Ctx, fiber.Handler]\n\nvar ConfigDefault",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "stale") {
		t.Errorf("the old comment is still there:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 120 {
			t.Errorf("a line of %d columns: %q", len(line), line)
		}
	}
	again, err := Rewrite(out, fields, params)
	if err != nil || string(again) != got {
		t.Errorf("a second Rewrite changed the comment (%v)", err)
	}
}

func TestRewriteRefusesWhatItCannotDocument(t *testing.T) {
	if _, err := Rewrite([]byte("package x\n\ntype Config struct{}\n"), nil, nil); err == nil {
		t.Error("an adapter without the alias: no error")
	}
	if _, err := Rewrite([]byte(adapterSrc), nil, []string{"C"}); err == nil {
		t.Error("two type arguments for one parameter: no error")
	}
	dir := t.TempDir()
	src := strings.Replace(coreSrc, "Optional. Default: nil", "Optional.", 1)
	if err := os.WriteFile(filepath.Join(dir, "config.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CoreFields(dir); err == nil || !strings.Contains(err.Error(), "Config.Next") {
		t.Errorf("a field without a default: %v, want an error naming Config.Next", err)
	}
}

// The adapters in this repository are what configdoc writes: a Config field added or changed in a core shows in
// both adapters' godoc.
func TestAdaptersAreCurrent(t *testing.T) {
	stale, err := Run(filepath.Join("..", "..", ".."), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("out of date: %v; run `go run ./configdoc -repo ../..` in .github/tools", stale)
	}
}

func TestTableHasARowPerFieldWithBothVersionsTypes(t *testing.T) {
	fields := []Field{
		{Name: "Next", Type: "func(c C) bool", Default: "nil", Summary: "Next skips."},
		{Name: "Lower", Type: "float64", Default: "0.9", Summary: "Lower | upper."},
	}
	readme := "# x\n\n## Config\n\n" + tableBegin + "| old |\n" + tableEnd + "\nAfter.\n"
	out, err := Table([]byte(readme), fields, []string{"C", "H"}, []string{"x", "v3/x", "nethttp/x"},
		[][]string{{"*fiber.Ctx", "fiber.Handler"}, {"fiber.Ctx", "fiber.Handler"}, {"*http.Request", "http.Handler"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "# x\n\n## Config\n\n" + tableBegin +
		"| Property | Type | Description | Default |\n|---|---|---|---|\n" +
		"| Next | `func(c *fiber.Ctx) bool` (v3: `func(c fiber.Ctx) bool`; net/http: `func(c *http.Request) bool`) | Next skips. | nil |\n" +
		"| Lower | `float64` | Lower \\| upper. | 0.9 |\n" + tableEnd + "\nAfter.\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if _, err := Table([]byte("# x\n"), fields, nil, []string{"x"}, [][]string{nil}); err == nil {
		t.Error("a README without the markers: no error")
	}
}
