package main

import (
	"bufio"
	"fmt"
	"strings"
)

// Program returns the README's first complete program: the first ```go block that starts with "package main".
func Program(readme string) (string, error) {
	var block []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(trimmed, "```go"):
			in, block = true, nil
		case in && trimmed == "```":
			in = false
			for _, l := range block {
				if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "//") {
					continue
				}
				if strings.TrimSpace(l) == "package main" {
					return strings.Join(block, "\n") + "\n", nil
				}
				break
			}
		case in:
			block = append(block, line)
		}
	}
	return "", fmt.Errorf("README.md has no complete program (a ```go block starting with \"package main\")")
}

// GetLine returns the arguments of the README's `go get` line for the module path: "go get PATH" or
// "go get PATH@VERSION", a trailing "# comment" left out.
func GetLine(readme, path string) ([]string, error) {
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "go" && f[1] == "get" && (f[2] == path || strings.HasPrefix(f[2], path+"@")) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("README.md has no `go get %s` line", path)
}
