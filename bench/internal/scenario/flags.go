package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ParseList splits a comma-separated flag value and checks that every item is one of known.
func ParseList(list string, known []string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("unknown %q (one of %s)", s, strings.Join(known, ","))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}
