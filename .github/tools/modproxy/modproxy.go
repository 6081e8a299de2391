// Package modproxy writes a file-system Go module proxy (GOPROXY=file:///DIR) serving modules of a git
// repository from its tags, laid out and zipped as a public module proxy serves them: <escaped path>/@v/list,
// <version>.info, <version>.mod and <version>.zip, the zip made by golang.org/x/mod/zip from the tagged tree
// (nested modules left out, the repository's LICENSE included).
package modproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

// Module is one module version the proxy serves.
type Module struct {
	Dir     string // the module's directory in the repository ("v3/loadshed")
	Path    string // its module path
	Version string
	Tag     string
}

// ParseTag splits a module tag, "v3/loadshed/v0.1.0", into its directory and version.
func ParseTag(tag string) (dir, version string, err error) {
	i := strings.LastIndex(tag, "/")
	if i <= 0 {
		return "", "", fmt.Errorf("tag %q is not <module directory>/<version>", tag)
	}
	dir, version = tag[:i], tag[i+1:]
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return "", "", fmt.Errorf("tag %q does not end in a canonical semantic version", tag)
	}
	return dir, version, nil
}

// Write adds to the proxy in dir the module version of each tag of the repository at repo.
func Write(dir, repo string, tags []string) ([]Module, error) {
	var mods []Module
	for _, tag := range tags {
		m, err := writeOne(dir, repo, tag)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tag, err)
		}
		mods = append(mods, m)
	}
	return mods, nil
}

func writeOne(dir, repo, tag string) (Module, error) {
	sub, version, err := ParseTag(tag)
	if err != nil {
		return Module{}, err
	}
	gomod, err := git(repo, "show", tag+":"+sub+"/go.mod")
	if err != nil {
		return Module{}, err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return Module{}, fmt.Errorf("%s/go.mod has no module line", sub)
	}
	when, err := git(repo, "log", "-1", "--format=%cI", tag)
	if err != nil {
		return Module{}, err
	}
	at, err := time.Parse(time.RFC3339, strings.TrimSpace(string(when)))
	if err != nil {
		return Module{}, err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return Module{}, err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return Module{}, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at.UTC()})
	if err != nil {
		return Module{}, err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return Module{}, err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), gomod, 0o644); err != nil {
		return Module{}, err
	}
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return Module{}, err
	}
	err = modzip.CreateFromVCS(zf, module.Version{Path: path, Version: version}, repo, tag, sub)
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Module{}, fmt.Errorf("zipping: %w", err)
	}
	if err := addToList(filepath.Join(vdir, "list"), version); err != nil {
		return Module{}, err
	}
	return Module{Dir: sub, Path: path, Version: version, Tag: tag}, nil
}

func addToList(file, version string) error {
	data, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	versions := strings.Fields(string(data))
	for _, v := range versions {
		if v == version {
			return nil
		}
	}
	versions = append(versions, version)
	sort.Slice(versions, func(i, j int) bool { return semver.Compare(versions[i], versions[j]) < 0 })
	return os.WriteFile(file, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
