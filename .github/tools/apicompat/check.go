package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
	"golang.org/x/tools/go/packages"
)

// Result is the gate's verdict on one module.
type Result struct {
	Module, Since, Version string
	// Incompatible lists apidiff's incompatible changes; Unnamed those of them no new Breaking entry names.
	Incompatible, Unnamed []string
	// MajorChange is true when Version's major version differs from Since's.
	MajorChange bool
}

// OK reports whether the module may be released.
func (r Result) OK() bool { return r.MajorChange || len(r.Unnamed) == 0 }

func (r Result) String() string {
	var b strings.Builder
	switch {
	case len(r.Incompatible) == 0:
		fmt.Fprintf(&b, "apicompat: %s: compatible with %s\n", r.Module, r.Since)
	case r.MajorChange:
		fmt.Fprintf(&b, "apicompat: %s: %d incompatible changes since %s, allowed by the major version change to %s\n",
			r.Module, len(r.Incompatible), r.Since, r.Version)
	case len(r.Unnamed) == 0:
		fmt.Fprintf(&b, "apicompat: %s: %d incompatible changes since %s, each named by a Breaking entry of CHANGELOG.md\n",
			r.Module, len(r.Incompatible), r.Since)
	default:
		fmt.Fprintf(&b, "apicompat: %s: incompatible with %s, and the \"## %s\" section of CHANGELOG.md has no Breaking entry, added since then, naming:\n",
			r.Module, r.Since, r.Module)
		for _, c := range r.Unnamed {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		fmt.Fprintf(&b, "  (add one, e.g. \"- Breaking: `%s` ...\", or release a new major version)\n", changedName(r.Unnamed[0]))
	}
	return b.String()
}

// Check compares the module on the tree at repo with its API at the tag since.
func Check(repo, module, since, version string) (Result, error) {
	res := Result{Module: module, Since: since, Version: version}
	sinceVersion := since[strings.LastIndex(since, "/")+1:]
	if !semver.IsValid(sinceVersion) {
		return res, fmt.Errorf("tag %s does not end in a semantic version", since)
	}
	if version != "" {
		if !semver.IsValid(version) {
			return res, fmt.Errorf("version %q is not a semantic version", version)
		}
		res.MajorChange = semver.Major(version) != semver.Major(sinceVersion)
	}

	old, err := os.MkdirTemp("", "apicompat-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(old)
	if err := extract(repo, since, old); err != nil {
		return res, err
	}
	oldMod, err := load(filepath.Join(old, module))
	if err != nil {
		return res, fmt.Errorf("loading %s at %s: %w", module, since, err)
	}
	newMod, err := load(filepath.Join(repo, module))
	if err != nil {
		return res, fmt.Errorf("loading %s: %w", module, err)
	}
	for _, c := range apidiff.ModuleChanges(oldMod, newMod).Changes {
		if !c.Compatible {
			res.Incompatible = append(res.Incompatible, c.Message)
		}
	}
	if len(res.Incompatible) == 0 {
		return res, nil
	}

	current, err := os.ReadFile(filepath.Join(repo, "CHANGELOG.md"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, err
	}
	previous, _ := os.ReadFile(filepath.Join(old, "CHANGELOG.md"))
	entries := breakingEntries(section(previous, module), section(current, module))
	for _, c := range res.Incompatible {
		if !named(entries, changedName(c)) {
			res.Unnamed = append(res.Unnamed, c)
		}
	}
	return res, nil
}

// extract writes the repository's tree at rev into dir.
func extract(repo, rev, dir string) error {
	archive := exec.Command("git", "-C", repo, "archive", "--format=tar", rev)
	tar := exec.Command("tar", "-x", "-C", dir)
	var archiveErr, tarErr bytes.Buffer // one each: the two commands write at the same time
	archive.Stderr, tar.Stderr = &archiveErr, &tarErr
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	tar.Stdin = pipe
	if err := tar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		_ = tar.Wait()
		return fmt.Errorf("git archive %s: %w: %s", rev, err, strings.TrimSpace(archiveErr.String()))
	}
	if err := tar.Wait(); err != nil {
		return fmt.Errorf("extracting %s: %w: %s", rev, err, strings.TrimSpace(tarErr.String()))
	}
	return nil
}

// load type-checks the exported packages of the module in dir (not internal ones, not tests), alone.
func load(dir string) (*apidiff.Module, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	path := modfile.ModulePath(data)
	cfg := &packages.Config{
		Dir:  dir,
		Fset: token.NewFileSet(),
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule,
		Env:  append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	mod := &apidiff.Module{Path: path}
	var errs []error
	for _, p := range pkgs {
		if isInternal(p.PkgPath) {
			continue
		}
		for _, e := range p.Errors {
			errs = append(errs, e)
		}
		if len(p.Errors) == 0 {
			mod.Packages = append(mod.Packages, p.Types)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(mod.Packages) == 0 {
		return nil, fmt.Errorf("no packages in %s", dir)
	}
	return mod, nil
}

func isInternal(path string) bool {
	for _, el := range strings.Split(path, "/") {
		if el == "internal" {
			return true
		}
	}
	return false
}

// section returns the lines of the "## module" section of a changelog.
func section(changelog []byte, module string) []string {
	var lines []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(changelog))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			heading := strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "## ")), "`")
			in = heading == module
			continue
		}
		if in {
			lines = append(lines, line)
		}
	}
	return lines
}

// breakingEntries returns the lines of cur, not in prev, that say "Breaking".
func breakingEntries(prev, cur []string) []string {
	seen := make(map[string]bool, len(prev))
	for _, l := range prev {
		seen[strings.TrimSpace(l)] = true
	}
	var out []string
	for _, l := range cur {
		t := strings.TrimSpace(l)
		if !seen[t] && strings.Contains(strings.ToLower(t), "breaking") {
			out = append(out, t)
		}
	}
	return out
}

// changedName is the object an apidiff message is about: "(*Shedder).Close: removed" → "Shedder.Close"; a
// package's own message ("package example.com/m/sub: removed") gives the package path.
func changedName(msg string) string {
	name := msg
	if i := strings.Index(msg, ": "); i >= 0 {
		name = msg[:i]
	}
	name = strings.TrimPrefix(name, "package ")
	if i := strings.LastIndex(name, ", "); i >= 0 { // "./sub, Foo": the object in a subpackage
		name = name[i+2:]
	}
	return strings.NewReplacer("(*", "", "(", "", ")", "").Replace(name)
}

func named(entries []string, name string) bool {
	for _, e := range entries {
		if strings.Contains(e, name) {
			return true
		}
	}
	return false
}
