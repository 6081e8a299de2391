// Command installcheck consumes the library modules the way users do. In a throwaway clone of the repository
// (with the work tree's uncommitted changes) it runs `.github/scripts/release.sh --dry-run` for every library
// module, serves the tags it made from a file-system module proxy built as a public proxy builds it, and then,
// for each module, in a scratch module outside the repository with GOWORK=off, GOFLAGS=-mod=mod, no replace and
// a module cache that starts empty and is shared by the apps after the first: runs the `go get` line of the
// module's README, builds and vets the README's complete program, and checks that `go mod tidy` changes nothing
// and that the app compiles no package of the other Fiber version.
//
//	installcheck [-root DIR] [-work DIR] [-modules a,b] [-mutations]
//
// With -mutations it then proves that it catches three broken releases, each failing with a message naming
// the module: an adapter tagged while it requires an untagged core, a README program that no longer compiles,
// and a v3 adapter that pulls in Fiber v2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	root := flag.String("root", "", "the repository (default: the git top level of the current directory)")
	work := flag.String("work", filepath.Join(os.TempDir(), "fiberguard-installcheck"),
		"scratch directory, emptied first (a fixed path lets the Go build cache serve later runs)")
	only := flag.String("modules", "", "comma-separated module directories to install (default: every library module)")
	mutations := flag.Bool("mutations", false, "also prove that three broken releases fail")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: installcheck [-root DIR] [-work DIR] [-modules a,b] [-mutations]")
		os.Exit(2)
	}
	if err := mainErr(*root, *work, *only, *mutations); err != nil {
		fmt.Fprintf(os.Stderr, "installcheck: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func mainErr(root, work, only string, mutations bool) error {
	start := time.Now()
	if root == "" {
		out, err := run(".", nil, "git", "rev-parse", "--show-toplevel")
		if err != nil {
			return fmt.Errorf("finding the repository: %s", out)
		}
		root = strings.TrimSpace(out)
	}
	env, err := prepare(work)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	repo := filepath.Join(work, "repo")
	if err := Snapshot(root, repo); err != nil {
		return err
	}
	version, err := NextVersion(repo)
	if err != nil {
		return err
	}
	r, err := ReleaseDry(repo, filepath.Join(work, "proxy"), version, false)
	if err != nil {
		return err
	}
	dirs := libraryDirs(r)
	if only != "" {
		dirs = strings.Split(only, ",")
	}
	fmt.Fprintf(env.Out, "installcheck: release.sh --dry-run %s made %d tags in a clone; serving them from file://%s\n",
		version, len(r.Modules), r.Proxy)
	fmt.Fprintf(env.Out, "installcheck: installing %d modules, each in its own scratch module, GOWORK=off GOFLAGS=-mod=mod, module cache %s (emptied first, then shared)\n",
		len(dirs), env.ModCache)
	var failed []string
	for _, d := range dirs {
		if err := env.App(r, d, filepath.Join(work, "apps", strings.ReplaceAll(d, "/", "-"))); err != nil {
			fmt.Fprintf(os.Stderr, "installcheck: FAIL %v\n", err)
			failed = append(failed, d)
		}
	}
	// The root README's install lines must be lines the check has just proven.
	if err := rootGetLines(filepath.Join(root, "README.md"), r, dirs, failed); err != nil {
		fmt.Fprintf(os.Stderr, "installcheck: FAIL %v\n", err)
		failed = append(failed, "README.md")
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d modules cannot be installed as users install them: %s", len(failed), len(dirs), strings.Join(failed, " "))
	}
	fmt.Fprintf(env.Out, "installcheck: ok: %d of %d modules install, build, vet and tidy from the release (%.0fs)\n",
		len(dirs), len(dirs), time.Since(start).Seconds())

	if mutations {
		if err := env.Mutations(root, work, version); err != nil {
			return err
		}
		fmt.Fprintf(env.Out, "installcheck: ok: every broken release failed, naming its module (%.0fs in all)\n", time.Since(start).Seconds())
	}
	return nil
}

// prepare empties work and returns the environment of its apps.
func prepare(work string) (*Env, error) {
	modcache := filepath.Join(work, "modcache")
	if _, err := os.Stat(modcache); err == nil {
		// The module cache is read-only; go clean knows how to remove it.
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+modcache, "GOWORK=off", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("emptying %s: %v\n%s", modcache, err, out)
		}
	}
	if err := os.RemoveAll(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(modcache, 0o755); err != nil {
		return nil, err
	}
	upstream := strings.TrimSpace(goEnv("GOPROXY"))
	if upstream == "" || upstream == "off" {
		upstream = "https://proxy.golang.org,direct"
	}
	return &Env{ModCache: modcache, Upstream: upstream, Out: os.Stdout}, nil
}

func goEnv(key string) string {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func libraryDirs(r *Release) []string {
	var dirs []string
	for d := range r.Modules {
		if strings.HasSuffix(d, "/core") {
			continue // a core is installed by its adapters, never on its own
		}
		dirs = append(dirs, d)
	}
	sortDirs(dirs)
	return dirs
}

// sortDirs orders modules as a user meets them: the adapters (Fiber v2, v3, then net/http); cores are reached
// through them.
func sortDirs(dirs []string) {
	key := func(d string) string {
		switch {
		case strings.HasSuffix(d, "/core"):
			return "3" + d
		case strings.HasPrefix(d, "nethttp/"):
			return "2" + d
		case strings.HasPrefix(d, "v3/"):
			return "1" + d
		}
		return "0" + d
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return strings.Compare(key(a), key(b)) })
}

// Mutations breaks a release three ways, each in a fresh clone at its own version, and requires each to fail
// with a message naming the broken module and what Go said.
func (e *Env) Mutations(root, work, version string) error {
	cases := []struct {
		name, module, want string
		tagged             bool
		mutate             func(repo, version string) error
	}{
		{
			name: "an adapter tagged while it requires an untagged core", module: "loadshed",
			want: "loadshed/core@v0.0.0", tagged: true,
			mutate: func(repo, v string) error {
				// What a hand release did: tag the core and the adapter on the same commit, leaving the
				// adapter's requirement at the placeholder.
				if out, err := run(repo, nil, "go", "mod", "edit", "-require=github.com/fiberguard/fiberguard/loadshed/core@v0.0.0", "loadshed/go.mod"); err != nil {
					return errors.New(out)
				}
				if err := commitAll(repo, "require the placeholder"); err != nil {
					return err
				}
				for _, t := range []string{"loadshed/core/" + v, "loadshed/" + v} {
					if out, err := run(repo, nil, "git", "tag", t); err != nil {
						return errors.New(out)
					}
				}
				return nil
			},
		},
		{
			name: "a README program that no longer compiles", module: "loadshed", want: "undefined: loadshed.NoSuchOption",
			mutate: func(repo, _ string) error {
				return editProgram(filepath.Join(repo, "loadshed", "README.md"), "loadshed.New(", "loadshed.NoSuchOption(")
			},
		},
		{
			name: "a v3 adapter that pulls Fiber v2", module: "v3/loadshed", want: "github.com/gofiber/fiber/v2",
			mutate: func(repo, _ string) error {
				dir := filepath.Join(repo, "v3", "loadshed")
				if err := os.WriteFile(filepath.Join(dir, "fiberv2.go"), []byte("package loadshed\n\nimport _ \"github.com/gofiber/fiber/v2\"\n"), 0o644); err != nil {
					return err
				}
				if out, err := run(dir, nil, "go", "mod", "edit", "-require=github.com/gofiber/fiber/v2@v2.52.15"); err != nil {
					return errors.New(out)
				}
				return nil
			},
		},
	}
	for i, c := range cases {
		v := fmt.Sprintf("%s.m%d", version, i+1)
		dir := filepath.Join(work, fmt.Sprintf("mutation%d", i+1))
		repo := filepath.Join(dir, "repo")
		if err := Snapshot(root, repo); err != nil {
			return err
		}
		if err := c.mutate(repo, v); err != nil {
			return fmt.Errorf("mutation %q: %w", c.name, err)
		}
		if err := commitAll(repo, "mutation"); err != nil {
			return err
		}
		r, err := ReleaseDry(repo, filepath.Join(dir, "proxy"), v, c.tagged)
		if err != nil {
			return fmt.Errorf("mutation %q: %w", c.name, err)
		}
		err = e.App(r, c.module, filepath.Join(dir, "app"))
		var f *Failure
		switch {
		case err == nil:
			return fmt.Errorf("mutation %q: the check passed a broken release of %s", c.name, c.module)
		case !errors.As(err, &f) || f.Module != c.module || !strings.Contains(f.Output, c.want):
			return fmt.Errorf("mutation %q: the failure does not name %s and %q:\n%v", c.name, c.module, c.want, err)
		}
		first := ""
		for _, l := range strings.Split(f.Output, "\n") {
			if strings.Contains(l, c.want) {
				first = strings.TrimSpace(l)
				break
			}
		}
		fmt.Fprintf(e.Out, "installcheck: ok mutation %d, %s: failed as it must: %s: %s: %s\n", i+1, c.name, f.Module, f.Step, first)
	}
	return nil
}

// editProgram replaces old by new inside the README's complete program.
func editProgram(readme, old, new string) error {
	data, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	program, err := Program(string(data))
	if err != nil {
		return err
	}
	if !strings.Contains(program, old) {
		return fmt.Errorf("%s's program has no %q", readme, old)
	}
	text := strings.Replace(string(data), program, strings.Replace(program, old, new, 1), 1)
	return os.WriteFile(readme, []byte(text), 0o644)
}

// rootGetLines checks that every `go get` line of the root README names an installed module that passed.
func rootGetLines(readme string, r *Release, dirs, failed []string) error {
	data, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	ok := map[string]bool{}
	for _, d := range dirs {
		ok[r.Modules[d].Path] = true
	}
	for _, d := range failed {
		ok[r.Modules[d].Path] = false
	}
	released := map[string]bool{}
	for _, m := range r.Modules {
		released[m.Path] = true
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "go" || f[1] != "get" {
			continue
		}
		path, _, _ := strings.Cut(f[2], "@")
		if _, checked := ok[path]; released[path] && !checked {
			continue // a module left out with -modules
		}
		if !ok[path] {
			return fmt.Errorf("README.md: `go get %s` is not an install line this check proved", f[2])
		}
		n++
	}
	fmt.Printf("installcheck: ok README.md: its %d go get lines are among those installed above\n", n)
	return nil
}
