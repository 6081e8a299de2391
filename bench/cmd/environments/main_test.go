package main

import (
	"strings"
	"testing"
)

func TestColumns(t *testing.T) {
	for _, tc := range []struct {
		name, anchors string
		signals       []string
		want          []string // column names, in order
		err           string
	}{
		{name: "signals then anchors", signals: []string{"default", "cpu"}, anchors: "plain,failsafe,gozero",
			want: []string{"default", "cpu", "no shedding", "failsafe-go adaptivelimiter", "go-zero core/load shedder"}},
		{name: "anchors in the order given", signals: []string{"default"}, anchors: " gozero , plain",
			want: []string{"default", "go-zero core/load shedder", "no shedding"}},
		{name: "no anchors", signals: []string{"default"}, anchors: "", want: []string{"default"}},
		{name: "blank anchors", signals: []string{"default"}, anchors: "  ", want: []string{"default"}},
		{name: "a repeat counts once", signals: []string{"cpu", "cpu"}, anchors: "plain,plain",
			want: []string{"cpu", "no shedding"}},
		{name: "an unknown anchor", signals: []string{"default"}, anchors: "plain,bbr", err: `anchors: unknown "bbr"`},
		{name: "commas alone", signals: []string{"default"}, anchors: ",", err: "anchors: empty list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols, err := columns(tc.signals, tc.anchors)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("columns(%v, %q) = %v, %v; want an error containing %q", tc.signals, tc.anchors, cols, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cols {
				got = append(got, c.String())
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("columns(%v, %q) = %q, want %q", tc.signals, tc.anchors, got, tc.want)
			}
			for _, c := range cols { // a signal runs under loadshed, an anchor under its own mode
				if isAnchor := c.mode != "loadshed"; isAnchor != (anchorNames[c.mode] != "") || isAnchor && c.signal != "default" {
					t.Fatalf("column %+v: mode and signal do not match", c)
				}
			}
		})
	}
}
