package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"fiberguard.tools/modproxy"
)

// Env is where a check runs: the module cache its apps share and the proxy behind ours.
type Env struct {
	ModCache  string    // GOMODCACHE of the apps
	Upstream  string    // the GOPROXY entries after ours (every module that is not this repository's)
	Out       io.Writer // progress
	firstDone bool
}

// Release is a throwaway clone of the repository, released into a file-system module proxy.
type Release struct {
	Repo    string // the clone
	Proxy   string // the proxy directory
	Version string
	Modules map[string]modproxy.Module // by module directory
}

// Snapshot clones the repository at root into dir and commits its work tree there as it is (tracked and
// untracked files, .gitignore respected), so that a check sees uncommitted changes too.
func Snapshot(root, dir string) error {
	if out, err := run(root, nil, "git", "clone", "-q", "--no-hardlinks", root, dir); err != nil {
		return fmt.Errorf("cloning %s: %w\n%s", root, err, out)
	}
	files, err := run(root, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	for _, f := range strings.Split(strings.TrimRight(files, "\x00"), "\x00") {
		if f == "" {
			continue
		}
		src, dst := filepath.Join(root, f), filepath.Join(dir, f)
		info, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) { // deleted in the work tree
			_ = os.Remove(dst)
			continue
		}
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return commitAll(dir, "the work tree")
}

func commitAll(dir, msg string) error {
	if out, err := run(dir, nil, "git", "add", "-A"); err != nil {
		return fmt.Errorf("git add: %w\n%s", err, out)
	}
	if _, err := run(dir, nil, "git", "diff", "--cached", "--quiet"); err == nil {
		return nil
	}
	if out, err := run(dir, gitIdentity, "git", "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return fmt.Errorf("git commit: %w\n%s", err, out)
	}
	return nil
}

var gitIdentity = []string{
	"GIT_AUTHOR_NAME=installcheck", "GIT_AUTHOR_EMAIL=installcheck@fiberguard.invalid",
	"GIT_COMMITTER_NAME=installcheck", "GIT_COMMITTER_EMAIL=installcheck@fiberguard.invalid",
}

// NextVersion is a pre-release of the minor version after every library module tag of the clone (v0.1.0 when
// none), unique to this run: the go command keeps an index of each module version it has unpacked in the build
// cache, taking a version's contents as fixed forever, so a check that served other contents under a version it
// had served before would build against the old file list.
func NextVersion(repo string) (string, error) {
	v, err := nextMinor(repo)
	if err != nil {
		return "", err
	}
	return v + "-check." + time.Now().UTC().Format("20060102150405"), nil
}

func nextMinor(repo string) (string, error) {
	tags, err := run(repo, nil, "git", "tag", "--list")
	if err != nil {
		return "", err
	}
	latest := "v0.0.0"
	for _, t := range strings.Fields(tags) {
		if _, v, err := modproxy.ParseTag(t); err == nil && semver.Compare(v, latest) > 0 {
			latest = v
		}
	}
	var major, minor int
	if _, err := fmt.Sscanf(semver.MajorMinor(latest), "v%d.%d", &major, &minor); err != nil {
		return "", err
	}
	return fmt.Sprintf("v%d.%d.0", major, minor+1), nil
}

// ReleaseDry runs the clone's release script with --dry-run at version, for every library module, and writes
// the tags it made into a proxy at proxyDir. With tagged set, the script is not run: the tags already in the
// clone at version are served as they are.
func ReleaseDry(repo, proxyDir, version string, tagged bool) (*Release, error) {
	if !tagged {
		out, err := run(repo, append([]string{"FIBERGUARD_RELEASE_GATE=0"}, gitIdentity...),
			filepath.Join(repo, ".github/scripts/release.sh"), "--dry-run", version)
		if err != nil {
			return nil, fmt.Errorf("release.sh --dry-run %s refused or failed:\n%s", version, indent(out))
		}
	}
	tags, err := run(repo, nil, "git", "tag", "--list", "*/"+version)
	if err != nil {
		return nil, err
	}
	mods, err := modproxy.Write(proxyDir, repo, strings.Fields(tags))
	if err != nil {
		return nil, err
	}
	r := &Release{Repo: repo, Proxy: proxyDir, Version: version, Modules: map[string]modproxy.Module{}}
	for _, m := range mods {
		r.Modules[m.Dir] = m
	}
	return r, nil
}

// Failure is a module's failed step, with Go's own words.
type Failure struct {
	Module, Step, Output string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s: %s:\n%s", f.Module, f.Step, indent(f.Output))
}

// App installs the module dir of the release in a scratch module at appDir as a user does: the README's
// `go get` line, its complete program, then build, vet and tidy; the app must resolve the released version and
// compile only its own Fiber version.
func (e *Env) App(r *Release, dir, appDir string) (err error) {
	m, ok := r.Modules[dir]
	if !ok {
		return &Failure{dir, "release", "no tag " + dir + "/" + r.Version + " was made"}
	}
	fail := func(step, out string) error { return &Failure{dir, step, strings.TrimSpace(out)} }
	readme, rerr := os.ReadFile(filepath.Join(r.Repo, dir, "README.md"))
	if rerr != nil {
		return fail("reading its README", rerr.Error())
	}
	program, perr := Program(string(readme))
	if perr != nil {
		return fail(dir+"/README.md", perr.Error())
	}
	get, gerr := GetLine(string(readme), m.Path)
	if gerr != nil {
		return fail(dir+"/README.md", gerr.Error())
	}
	if err := os.MkdirAll(appDir, 0o755); err != nil {
		return err
	}
	env := []string{
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOMODCACHE=" + e.ModCache,
		"GOPROXY=file://" + r.Proxy + "," + e.Upstream, "GONOSUMDB=github.com/fiberguard/*",
		"GOPRIVATE=", "GONOPROXY=",
	}
	before := countZips(e.ModCache)
	start := time.Now()
	steps := []struct {
		name string
		args []string
	}{
		{"go mod init", []string{"go", "mod", "init", "example.com/app"}},
		{strings.Join(get, " ") + " (the README's install line)", get},
	}
	for _, s := range steps {
		if out, err := run(appDir, env, s.args[0], s.args[1:]...); err != nil {
			return fail(s.name, out)
		}
	}
	if got, err := run(appDir, env, "go", "list", "-m", "-f", "{{.Version}}", m.Path); err != nil || strings.TrimSpace(got) != r.Version {
		return fail("resolving the release", fmt.Sprintf("%s resolved %q, not the release %s (%v)", m.Path, strings.TrimSpace(got), r.Version, err))
	}
	if err := os.WriteFile(filepath.Join(appDir, "main.go"), []byte(program), 0o644); err != nil {
		return err
	}
	graph := func() (map[string]string, error) {
		out, err := run(appDir, env, "go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
		if err != nil {
			return nil, errors.New(out)
		}
		g := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				g[f[0]] = f[1]
			}
		}
		return g, nil
	}
	got, gerr2 := graph()
	if gerr2 != nil {
		return fail("go list -m all after go get", gerr2.Error())
	}
	if out, err := run(appDir, env, "go", "mod", "tidy"); err != nil {
		return fail("go mod tidy", out)
	}
	// What tidy requires must be what go get had selected: a module or version it adds means a library's
	// go.mod misses a requirement. (Read from go.mod: listing the graph again would add go.sum lines.)
	gomod, merr := os.ReadFile(filepath.Join(appDir, "go.mod"))
	if merr != nil {
		return merr
	}
	mf, perr2 := modfile.ParseLax("go.mod", gomod, nil)
	if perr2 != nil {
		return fail("parsing the app's go.mod", perr2.Error())
	}
	tidied := map[string]string{}
	for _, req := range mf.Require {
		tidied[req.Mod.Path] = req.Mod.Version
	}
	if len(mf.Replace) > 0 {
		return fail("go.mod", "the app's go.mod holds a replace directive")
	}
	if changed := changedVersions(got, tidied); len(changed) > 0 {
		return fail("go mod tidy changed what go get had selected (a library's go.mod misses a requirement)", strings.Join(changed, "\n"))
	}
	for _, s := range [][]string{{"go", "build", "./..."}, {"go", "vet", "./..."}} {
		if out, err := run(appDir, env, s[0], s[1:]...); err != nil {
			return fail(strings.Join(s, " ")+" of the README's program", out)
		}
	}
	if out, err := run(appDir, env, "go", "mod", "tidy", "-diff"); err != nil {
		return fail("go mod tidy -diff after the build (go.mod or go.sum not tidy)", out)
	}
	deps, derr := run(appDir, env, "go", "list", "-deps", "./...")
	if derr != nil {
		return fail("go list -deps", deps)
	}
	if bad, what := foreignFiber(dir, deps); len(bad) > 0 {
		return fail("the app compiles "+what, strings.Join(bad, "\n"))
	}
	downloaded := countZips(e.ModCache) - before
	cache := "the shared module cache"
	if !e.firstDone {
		cache = "an empty module cache"
		e.firstDone = true
	}
	fmt.Fprintf(e.Out, "installcheck: ok %-17s %s@%s: go get, build, vet, tidy clean, no replace (%.1fs; from %s, %d module zips downloaded)\n",
		dir, m.Path, r.Version, time.Since(start).Seconds(), cache, downloaded)
	return nil
}

// foreignFiber lists the packages of a framework a module's app must not pull: Fiber v2 in a v3 one, Fiber v3
// in a v2 one, any Fiber in a core, any Fiber or fasthttp in a net/http adapter.
func foreignFiber(dir, deps string) ([]string, string) {
	var re *regexp.Regexp
	var what string
	switch {
	case strings.HasPrefix(dir, "nethttp/"):
		re, what = regexp.MustCompile(`^github\.com/(gofiber/|valyala/fasthttp(/|$))`), "Fiber or fasthttp packages (a net/http module must pull none)"
	case strings.HasPrefix(dir, "v3/"):
		re, what = regexp.MustCompile(`^github\.com/gofiber/fiber/v2(/|$)`), "Fiber v2 packages (a v3 module must pull none)"
	case strings.HasSuffix(dir, "/core"):
		re, what = regexp.MustCompile(`^github\.com/gofiber/`), "Fiber packages (a core must pull none)"
	default:
		re, what = regexp.MustCompile(`^github\.com/gofiber/fiber/v3(/|$)`), "Fiber v3 packages (a v2 module must pull none)"
	}
	var bad []string
	for _, p := range strings.Fields(deps) {
		if re.MatchString(p) {
			bad = append(bad, p)
		}
	}
	return bad, what
}

func changedVersions(before, after map[string]string) []string {
	var out []string
	for p, v := range after {
		if old, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s %s: added", p, v))
		} else if old != v {
			out = append(out, fmt.Sprintf("%s: %s -> %s", p, old, v))
		}
	}
	sort.Strings(out)
	return out
}

func countZips(modcache string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(modcache, "cache", "download"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".zip") {
			n++
		}
		return nil
	})
	return n
}

// run runs a command in dir with extra environment, returning its combined output.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
