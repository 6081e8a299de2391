#!/usr/bin/env bash
# Proves the module discovery used by the workflows: on a synthetic tree (nested module, hidden and testdata
# directories that must be ignored) and on this repository (where it must agree with go.work).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
fail() {
	echo "modules_test: FAIL: $*" >&2
	exit 1
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/alpha" "$tmp/beta/sub" "$tmp/examples" "$tmp/.hidden/x" "$tmp/alpha/testdata/mod" "$tmp/docs"
for d in alpha beta/sub examples .hidden/x alpha/testdata/mod; do
	echo "module example.com/$d" >"$tmp/$d/go.mod"
done

got="$(MODULES_ROOT="$tmp" "$here/modules.sh" | tr '\n' ' ')"
[ "$got" = "alpha beta/sub examples " ] || fail "plain listing: got '$got'"

got="$(MODULES_ROOT="$tmp" "$here/modules.sh" --json)"
[ "$got" = '["alpha","beta/sub","examples"]' ] || fail "json listing: got '$got'"
if command -v jq >/dev/null; then
	echo "$got" | jq -e 'length == 3' >/dev/null || fail "json listing is not valid JSON: $got"
fi

got="$(MODULES_ROOT="$tmp" "$here/modules.sh" --libraries)"
[ "$got" = '["alpha","beta/sub"]' ] || fail "library listing: got '$got'"

# On this repository the discovered modules must be exactly the workspace's.
want="$(cd "$root" && go list -m -f '{{.Dir}}' | sed "s|^$root/||" | LC_ALL=C sort | tr '\n' ' ')"
got="$("$here/modules.sh" | tr '\n' ' ')"
[ "$got" = "$want" ] || fail "modules.sh ($got) disagrees with go.work ($want)"

echo "modules_test: ok ($(echo "$got" | wc -w) modules)"
