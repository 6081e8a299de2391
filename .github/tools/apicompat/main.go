// Command apicompat is the compatibility gate of a library module's release: it compares the module's exported
// API on this tree with its API at a previous release tag, and fails on an incompatible change unless the major
// version changes or the module's section of CHANGELOG.md names the change in a "Breaking" entry added since that
// tag.
//
//	apicompat -repo DIR -module MODULE -since TAG [-version VERSION]
//
// MODULE is the module's directory in the repository (loadshed, v3/loadshed, loadshed/core); TAG is a tag of the
// repository (loadshed/v0.1.0); VERSION is the version about to be released, if any. The module's section of
// CHANGELOG.md is the one under the heading "## MODULE". An entry names a change when it holds the changed
// object's name as apidiff prints it, without its receiver's parentheses and star ("Config.Timeout",
// "Shedder.Close", "NewShedder").
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	module := flag.String("module", "", "the module's directory in the repository")
	since := flag.String("since", "", "the previous release tag to compare with")
	version := flag.String("version", "", "the version about to be released (optional)")
	flag.Parse()
	if *module == "" || *since == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: apicompat -repo DIR -module MODULE -since TAG [-version VERSION]")
		os.Exit(2)
	}
	res, err := Check(*repo, *module, *since, *version)
	if err != nil {
		fmt.Fprintf(os.Stderr, "apicompat: %s: %v\n", *module, err)
		os.Exit(1)
	}
	fmt.Print(res.String())
	if !res.OK() {
		os.Exit(1)
	}
}
