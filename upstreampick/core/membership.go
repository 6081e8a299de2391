package core

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
)

// removeAfter is the number of answers in a row an address must be missing from before it leaves the set (and
// drains): a name whose answers flap, or a resolver that returns a different subset each time, causes no drain
// storm.
const removeAfter = 3

// membership is the set of upstreams one discovered name contributes. An address joins with the first answer
// that holds it and leaves once missing from removeAfter answers in a row; answers that found nothing or
// failed change nothing, so the set never flaps to empty. The zero value is an empty set.
type membership struct {
	members map[string]*member // by target key
}

// member is one address of a membership.
type member struct {
	t      target
	order  netip.AddrPort // the sort order of Status
	misses int            // answers in a row it was missing from
}

// apply folds an answer that found addresses into the set: found are its upstreams, keep the keys whose
// presence it could not check (they are left as they are). It reports whether addresses joined or left.
func (m *membership) apply(found []target, keep map[string]bool) (changed bool) {
	if m.members == nil {
		m.members = make(map[string]*member, len(found))
	}
	present := make(map[string]bool, len(found))
	for _, t := range found {
		present[t.key] = true
		if mb := m.members[t.key]; mb != nil {
			mb.misses = 0
			continue
		}
		// A discovered target's host is an IP address and its port a number.
		ip, _ := netip.ParseAddr(t.host)
		port, _ := strconv.ParseUint(t.port, 10, 16)
		m.members[t.key] = &member{t: t, order: netip.AddrPortFrom(ip, uint16(port))}
		changed = true
	}
	for key, mb := range m.members {
		if present[key] || keep[key] {
			continue
		}
		if mb.misses++; mb.misses >= removeAfter {
			delete(m.members, key)
			changed = true
		}
	}
	return changed
}

// sorted returns the members by address, then port, then key.
func (m *membership) sorted() []*member {
	out := make([]*member, 0, len(m.members))
	for _, mb := range m.members {
		out = append(out, mb)
	}
	slices.SortFunc(out, func(a, b *member) int {
		if c := a.order.Compare(b.order); c != 0 {
			return c
		}
		return cmp.Compare(a.t.key, b.t.key)
	})
	return out
}
