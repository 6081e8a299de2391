package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo is a throwaway git repository holding module example.com/alpha in alpha/.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	r.write("alpha/go.mod", "module example.com/alpha\n\ngo 1.21\n")
	return r
}

func (r *repo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (r *repo) write(name, text string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) commit(tag string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "change")
	if tag != "" {
		r.git("tag", tag)
	}
}

const v1 = `package alpha

type Config struct{ Timeout, Retries int }

func New(c Config) int { return c.Timeout }

type Shedder struct{}

func (*Shedder) Close() {}
`

func TestCompatibleChangesPass(t *testing.T) {
	r := newRepo(t)
	r.write("alpha/alpha.go", v1)
	r.commit("alpha/v0.1.0")
	r.write("alpha/alpha.go", v1+"\nfunc Added() {}\n")
	r.write("alpha/internal/x/x.go", "package x\n\nfunc Anything() {}\n")
	res, err := Check(r.dir, "alpha", "alpha/v0.1.0", "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || len(res.Incompatible) != 0 {
		t.Fatalf("an added function is compatible: %+v", res)
	}
	if !strings.Contains(res.String(), "alpha: compatible with alpha/v0.1.0") {
		t.Fatalf("message: %q", res.String())
	}
}

func TestIncompatibleChangeNeedsABreakingEntry(t *testing.T) {
	r := newRepo(t)
	r.write("alpha/alpha.go", v1)
	r.write("CHANGELOG.md", "# Changelog\n\n## alpha\n- Breaking: `Config.Retries` was renamed (an old entry)\n\n## beta\n")
	r.commit("alpha/v0.1.0")
	// Remove a field and a method, change a signature: three incompatible changes.
	broken := strings.NewReplacer("Timeout, Retries int", "Timeout int", "func (*Shedder) Close() {}\n", "",
		"func New(c Config) int", "func New(c Config) string").Replace(v1)
	broken = strings.Replace(broken, "return c.Timeout", `return ""`, 1)
	r.write("alpha/alpha.go", broken)

	res, err := Check(r.dir, "alpha", "alpha/v0.1.0", "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || len(res.Incompatible) != 3 || len(res.Unnamed) != 3 {
		t.Fatalf("three unnamed incompatible changes must fail (an entry older than the tag names none): %+v", res)
	}
	msg := res.String()
	for _, want := range []string{"alpha: incompatible with alpha/v0.1.0", `"## alpha" section`, "Config.Retries", "Close", "New"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}

	// A Breaking entry in another module's section does not count.
	r.write("CHANGELOG.md", "# Changelog\n\n## alpha\n- Breaking: `Config.Retries` was renamed (an old entry)\n\n## beta\n- Breaking: `Shedder.Close` and `New`\n")
	if res, _ = Check(r.dir, "alpha", "alpha/v0.1.0", "v0.2.0"); len(res.Unnamed) != 3 {
		t.Fatalf("beta's entry excused alpha: %+v", res)
	}

	// Entries naming two of the three leave the third.
	r.write("CHANGELOG.md", "# Changelog\n\n## alpha\n- Breaking: `Config.Retries` was renamed (an old entry)\n- **Breaking**: `Shedder.Close` is gone, `New` returns a string\n\n## beta\n")
	res, _ = Check(r.dir, "alpha", "alpha/v0.1.0", "v0.2.0")
	if res.OK() || len(res.Unnamed) != 1 || !strings.Contains(res.Unnamed[0], "Config.Retries") {
		t.Fatalf("want only Config.Retries unnamed: %+v", res)
	}

	// Naming the last one passes.
	r.write("CHANGELOG.md", "# Changelog\n\n## alpha\n- Breaking: `Config.Retries` was renamed (an old entry)\n- **Breaking**: `Shedder.Close` is gone, `New` returns a string\n- Breaking: `Config.Retries` removed again\n\n## beta\n")
	res, _ = Check(r.dir, "alpha", "alpha/v0.1.0", "v0.2.0")
	if !res.OK() || !strings.Contains(res.String(), "each named by a Breaking entry") {
		t.Fatalf("every change is named: %+v\n%s", res, res.String())
	}

	// A major version change allows them without entries.
	r.write("CHANGELOG.md", "")
	res, _ = Check(r.dir, "alpha", "alpha/v0.1.0", "v1.0.0")
	if !res.OK() || !res.MajorChange {
		t.Fatalf("a major version change allows breaking changes: %+v", res)
	}
}

func TestRemovedPackageIsIncompatible(t *testing.T) {
	r := newRepo(t)
	r.write("alpha/alpha.go", v1)
	r.write("alpha/sub/sub.go", "package sub\n\nfunc Helper() {}\n")
	r.commit("alpha/v0.1.0")
	if err := os.RemoveAll(filepath.Join(r.dir, "alpha/sub")); err != nil {
		t.Fatal(err)
	}
	res, err := Check(r.dir, "alpha", "alpha/v0.1.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || len(res.Unnamed) != 1 || !strings.Contains(res.Unnamed[0], "example.com/alpha/sub") {
		t.Fatalf("a removed package is incompatible: %+v", res)
	}
}

func TestBadInput(t *testing.T) {
	r := newRepo(t)
	r.write("alpha/alpha.go", v1)
	r.commit("alpha/v0.1.0")
	if _, err := Check(r.dir, "alpha", "alpha/v0.9.0", ""); err == nil || !strings.Contains(err.Error(), "alpha/v0.9.0") {
		t.Fatalf("a missing tag must be an error naming it: %v", err)
	}
	if _, err := Check(r.dir, "alpha", "alpha/latest", ""); err == nil {
		t.Fatal("a tag without a version must be an error")
	}
	if _, err := Check(r.dir, "alpha", "alpha/v0.1.0", "1.0"); err == nil {
		t.Fatal("a bad version must be an error")
	}
}

func TestChangedName(t *testing.T) {
	for msg, want := range map[string]string{
		"(*Shedder).Close: removed":                          "Shedder.Close",
		"Config.Timeout: changed from int to string":         "Config.Timeout",
		"New: changed from func() int to func() string":      "New",
		"package example.com/alpha/sub: removed":             "example.com/alpha/sub",
		"./sub, Helper: removed":                             "Helper",
		"(Window).Size: changed from func() int to func() T": "Window.Size",
	} {
		if got := changedName(msg); got != want {
			t.Errorf("changedName(%q) = %q, want %q", msg, got, want)
		}
	}
}
