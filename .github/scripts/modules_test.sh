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

# The release drafter's versioning, on a throwaway repository.
repo="$tmp/repo"
mkdir -p "$repo/alpha" "$repo/beta"
(
	cd "$repo"
	git init -q
	git config user.email ci@example.invalid
	git config user.name ci
	commit() { echo "$RANDOM" >>"$1/f"; git add -A; git commit -qm "$2"; }
	draft() { "$here/release-draft.sh" "$1" | head -n1; }

	commit alpha "alpha: first"
	[ "$(draft alpha)" = "tag=alpha/v0.1.0" ] || fail "first release: $(draft alpha)"
	git tag alpha/v0.1.0
	[ "$(draft alpha)" = "tag=" ] || fail "no change since the tag: $(draft alpha)"
	commit beta "beta: unrelated"
	[ "$(draft alpha)" = "tag=" ] || fail "another module's commit released alpha: $(draft alpha)"
	commit alpha "alpha: fix a crash"
	[ "$(draft alpha)" = "tag=alpha/v0.1.1" ] || fail "fix: $(draft alpha)"
	commit alpha "alpha: new option"
	[ "$(draft alpha)" = "tag=alpha/v0.2.0" ] || fail "feature: $(draft alpha)"
	git tag alpha/v1.4.2
	commit alpha "alpha: rename Config.X

BREAKING CHANGE: Config.X is now Config.Y"
	[ "$(draft alpha)" = "tag=alpha/v2.0.0" ] || fail "breaking after v1: $(draft alpha)"
	"$here/release-draft.sh" alpha | grep -q '^- alpha: rename Config.X$' || fail "notes lack the commit"
)
echo "release_draft_test: ok"
