package modproxy

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWriteServesTagsAsAProxyDoes(t *testing.T) {
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q")
	write(t, repo, "LICENSE", "MIT\n")
	write(t, repo, "alpha/go.mod", "module github.com/Example/r/alpha\n\ngo 1.21\n")
	write(t, repo, "alpha/alpha.go", "package alpha\n")
	write(t, repo, "alpha/core/go.mod", "module github.com/Example/r/alpha/core\n\ngo 1.21\n")
	write(t, repo, "alpha/core/core.go", "package core\n")
	write(t, repo, "alpha/untracked.go", "package alpha\n")
	gitRun(t, repo, "add", "alpha/go.mod", "alpha/alpha.go", "alpha/core", "LICENSE")
	gitRun(t, repo, "commit", "-q", "-m", "one")
	gitRun(t, repo, "tag", "alpha/v0.1.0")
	gitRun(t, repo, "tag", "alpha/core/v0.1.0")
	write(t, repo, "alpha/alpha.go", "package alpha\n\nfunc Two() {}\n")
	gitRun(t, repo, "commit", "-q", "-am", "two")
	gitRun(t, repo, "tag", "alpha/v0.2.0")

	proxy := t.TempDir()
	mods, err := Write(proxy, repo, []string{"alpha/v0.2.0", "alpha/core/v0.1.0", "alpha/v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 3 || mods[1].Path != "github.com/Example/r/alpha/core" || mods[1].Dir != "alpha/core" || mods[1].Version != "v0.1.0" {
		t.Fatalf("modules: %+v", mods)
	}
	v := filepath.Join(proxy, "github.com", "!example", "r", "alpha", "@v") // upper case escaped as a proxy does
	list, err := os.ReadFile(filepath.Join(v, "list"))
	if err != nil || string(list) != "v0.1.0\nv0.2.0\n" {
		t.Fatalf("list = %q, %v", list, err)
	}
	var info struct{ Version, Time string }
	data, err := os.ReadFile(filepath.Join(v, "v0.1.0.info"))
	if err != nil || json.Unmarshal(data, &info) != nil || info.Version != "v0.1.0" || info.Time == "" {
		t.Fatalf("info = %s, %v", data, err)
	}
	if mod, _ := os.ReadFile(filepath.Join(v, "v0.1.0.mod")); string(mod) != "module github.com/Example/r/alpha\n\ngo 1.21\n" {
		t.Fatalf("mod = %q", mod)
	}
	files := zipFiles(t, filepath.Join(v, "v0.1.0.zip"))
	want := []string{
		"github.com/Example/r/alpha@v0.1.0/LICENSE", // inside the zip the path is not escaped
		"github.com/Example/r/alpha@v0.1.0/alpha.go",
		"github.com/Example/r/alpha@v0.1.0/go.mod",
	}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("zip holds %q, want %q (the tagged tree, no nested module, no untracked file, the root LICENSE)", files, want)
	}
	if files := zipFiles(t, filepath.Join(proxy, "github.com", "!example", "r", "alpha", "core", "@v", "v0.1.0.zip")); len(files) != 3 {
		t.Fatalf("core zip: %q", files)
	}
}

func zipFiles(t *testing.T, name string) []string {
	t.Helper()
	zr, err := zip.OpenReader(name)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var files []string
	for _, f := range zr.File {
		files = append(files, f.Name)
	}
	sort.Strings(files)
	return files
}

func TestBadTags(t *testing.T) {
	for _, tag := range []string{"v0.1.0", "alpha/0.1.0", "alpha/v1", "alpha/latest"} {
		if _, _, err := ParseTag(tag); err == nil {
			t.Errorf("ParseTag(%q) accepted a tag that is not <dir>/<canonical version>", tag)
		}
	}
	if _, err := Write(t.TempDir(), t.TempDir(), []string{"alpha/v0.1.0"}); err == nil || !strings.Contains(err.Error(), "alpha/v0.1.0") {
		t.Errorf("a tag missing from the repository: %v", err)
	}
}
