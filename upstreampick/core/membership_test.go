package core

import (
	"slices"
	"testing"
)

func TestMembership(t *testing.T) {
	tg := func(ip string) target {
		key := "http://" + ip + ":80"
		return target{server: key, key: key, host: ip, port: "80"}
	}
	a, b, c := tg("10.0.0.10"), tg("10.0.0.9"), tg("::1")
	type step struct {
		found   []target
		keep    []target
		changed bool
		members []string // by address
	}
	steps := []step{
		{found: []target{a, b}, changed: true, members: []string{b.key, a.key}},
		{found: []target{b, a}, members: []string{b.key, a.key}},                                // reordered
		{found: []target{a}, members: []string{b.key, a.key}},                                   // b missing once
		{found: []target{a}, members: []string{b.key, a.key}},                                   // twice
		{found: []target{a, b}, members: []string{b.key, a.key}},                                // back: count reset
		{found: []target{a}, members: []string{b.key, a.key}},                                   // 1
		{found: []target{a}, members: []string{b.key, a.key}},                                   // 2
		{found: []target{a}, changed: true, members: []string{a.key}},                           // 3: b leaves
		{found: []target{c}, keep: []target{a}, changed: true, members: []string{a.key, c.key}}, // a unchecked
		{found: []target{c}, keep: []target{a}, members: []string{a.key, c.key}},
		{found: []target{c}, keep: []target{a}, members: []string{a.key, c.key}},
		{found: []target{c}, members: []string{a.key, c.key}},
		{found: []target{c}, members: []string{a.key, c.key}},
		{found: []target{c}, changed: true, members: []string{c.key}},
	}
	var m membership
	for i, s := range steps {
		keep := map[string]bool{}
		for _, k := range s.keep {
			keep[k.key] = true
		}
		changed := m.apply(s.found, keep)
		var got []string
		for _, mb := range m.sorted() {
			got = append(got, mb.t.key)
		}
		if changed != s.changed || !slices.Equal(got, s.members) {
			t.Fatalf("step %d: changed %v, members %v; want %v, %v", i, changed, got, s.changed, s.members)
		}
	}
}
