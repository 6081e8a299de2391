// Command configdoc writes the doc comment of each Fiber adapter's Config, and the Config table of each module's
// README, from its core's Config, so that the fields are declared and documented once (in <module>/core) and a
// user who opens the adapter's Config, or the README, still sees every field with its type and default.
//
//	configdoc [-repo DIR] [-check]
//
// An adapter declares its Config as an alias of the core's generic Config with its Fiber version's types:
//
//	type Config = core.Config[*fiber.Ctx, fiber.Handler]
//
// configdoc replaces the comment above that line with a list of the core Config's fields, each with its type (the
// type parameters replaced by the alias's arguments) and the text after "Default:" in its doc. With -check it
// changes nothing and fails, naming the files, when a comment is not what it would write. The README's table
// stands between two marker lines (see Table): a row per field with its type (v2's, and v3's where it differs),
// the first sentence of its doc and its default.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Modules are the middlewares whose adapters' Configs are aliases of their cores'.
var Modules = []string{"loadshed", "rebalance", "throttle", "upstreampick"}

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	check := flag.Bool("check", false, "change nothing; fail when a Config's comment is out of date")
	only := flag.String("only", "", "one module instead of all")
	flag.Parse()
	if *only != "" {
		Modules = []string{*only}
	}
	stale, err := Run(*repo, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
	if *check && len(stale) > 0 {
		fmt.Fprintf(os.Stderr, "configdoc: out of date (run `go run ./configdoc -repo ../..` in .github/tools): %v\n", stale)
		os.Exit(1)
	}
	for _, f := range stale {
		fmt.Println("configdoc: wrote", f)
	}
}

// Run brings every adapter's Config comment up to date (with check, only finds the stale ones) and returns the
// files that were, or would be, changed.
func Run(repo string, check bool) ([]string, error) {
	var stale []string
	// update records rel as stale when out differs from what path holds, and writes it unless checking.
	update := func(path, rel string, src, out []byte) error {
		if string(out) == string(src) {
			return nil
		}
		stale = append(stale, rel)
		if check {
			return nil
		}
		return os.WriteFile(path, out, 0o644)
	}
	for _, m := range Modules {
		fields, params, err := CoreFields(filepath.Join(repo, m, "core"))
		if err != nil {
			return nil, err
		}
		dirs := adapterDirs(repo, m)
		args := make([][]string, len(dirs))
		for i, dir := range dirs {
			rel := filepath.Join(dir, m+".go")
			path := filepath.Join(repo, rel)
			src, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			if args[i], err = TypeArgs(src); err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			out, err := Rewrite(src, fields, params)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			if err := update(path, rel, src, out); err != nil {
				return nil, err
			}
		}
		rel := filepath.Join(m, "README.md")
		path := filepath.Join(repo, rel)
		readme, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out, err := Table(readme, fields, params, dirs, args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		if err := update(path, rel, readme, out); err != nil {
			return nil, err
		}
	}
	return stale, nil
}

// adapterDirs are the adapters of module m: Fiber v2's, Fiber v3's and, once it exists, net/http's.
func adapterDirs(repo, m string) []string {
	dirs := []string{m, filepath.Join("v3", m)}
	if _, err := os.Stat(filepath.Join(repo, "nethttp", m, m+".go")); err == nil {
		dirs = append(dirs, filepath.Join("nethttp", m))
	}
	return dirs
}
