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

# The test runner, on throwaway modules: a skipped test's reason reaches the summary; a failing test or a
# module that does not build fails the run, is shown, and does not stop the other modules.
gt="$tmp/gotest"
module() { # module TREE NAME, the test file on stdin
	mkdir -p "$gt/$1/$2"
	printf 'module example.com/%s\n\ngo 1.21\n' "$2" >"$gt/$1/$2/go.mod"
	cat >"$gt/$1/$2/x_test.go"
}
for tree in pass fail; do
	module "$tree" skipper <<'GO'
package skipper

import "testing"

func TestNeedsWidget(t *testing.T) { t.Skip("widget is not installed (apt-get install widget)") }
func TestWorks(t *testing.T)       { t.Log("chatter of a passing test") }
GO
done
module fail failer <<'GO'
package failer

import "testing"

func TestBroken(t *testing.T) { t.Errorf("broken: want %d, got %d", 1, 2) }
GO
module fail nobuild <<'GO'
package nobuild

import "testing"

func TestNothing(t *testing.T) { nosuch() }
GO

status=0
out="$(MODULES_ROOT="$gt/pass" "$here/gotest.sh" -count=1 2>&1)" || status=$?
[ "$status" -eq 0 ] || fail "gotest.sh on passing modules exited $status:
$out"
summary="$(printf '%s\n' "$out" | sed -n '/^=== skipped tests: 1$/,$p')"
printf '%s\n' "$summary" | grep -q '^--- SKIP: TestNeedsWidget (example.com/skipper)$' ||
	fail "the summary lacks the skipped test:
$out"
printf '%s\n' "$summary" | grep -q '^    x_test.go:5: widget is not installed (apt-get install widget)$' ||
	fail "the summary lacks the reason of the skip:
$out"
printf '%s\n' "$out" | grep -Eq '^ok[[:space:]]+example.com/skipper' || fail "no ok line for the package:
$out"
if printf '%s\n' "$out" | grep -q 'chatter'; then fail "a passing test's output was shown:
$out"; fi

status=0
out="$(MODULES_ROOT="$gt/fail" "$here/gotest.sh" -count=1 2>&1)" || status=$?
[ "$status" -ne 0 ] || fail "gotest.sh exited 0 though a test failed:
$out"
for want in 'x_test.go:5: broken: want 1, got 2' '--- FAIL: TestBroken' 'undefined: nosuch' \
	'=== FAIL: failer nobuild' 'widget is not installed (apt-get install widget)'; do
	printf '%s\n' "$out" | grep -qF -- "$want" || fail "gotest.sh output lacks '$want':
$out"
done
echo "gotest_test: ok"

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
	git tag alpha/v2.0.0
	# A module nested in alpha's directory is released on its own, and its commits are not alpha's.
	mkdir -p alpha/core
	printf 'module example.com/alpha/core\n' >alpha/core/go.mod
	printf 'module example.com/alpha\n' >alpha/go.mod
	git add -A
	git commit -qm "alpha/core: first"
	[ "$(draft alpha)" = "tag=alpha/v2.1.0" ] || fail "alpha's own go.mod is alpha's: $(draft alpha)"
	git tag alpha/v2.1.0
	commit alpha/core "alpha/core: new option"
	[ "$(draft alpha)" = "tag=" ] || fail "a nested module's commit released alpha: $(draft alpha)"
	[ "$(draft alpha/core)" = "tag=alpha/core/v0.1.0" ] || fail "nested module: $(draft alpha/core)"
	git tag alpha/core/v0.1.0
	[ "$(draft alpha)" = "tag=" ] || fail "the nested module's tag counted as alpha's: $(draft alpha)"
	commit alpha "alpha: fix a leak"
	[ "$(draft alpha)" = "tag=alpha/v2.1.1" ] || fail "fix beside a nested module: $(draft alpha)"
)
echo "release_draft_test: ok"

# The Fiber-version check, on a synthetic tree where a fake github.com/gofiber/fiber/v2 stands in: a v3 adapter
# or a core importing it fails the check, a v2 adapter does not.
ft="$tmp/fibertree"
mkdir -p "$ft/fiberv2" "$ft/examples"
printf 'module github.com/gofiber/fiber/v2\n\ngo 1.21\n' >"$ft/fiberv2/go.mod"
printf 'package fiber\n' >"$ft/fiberv2/fiber.go"
printf 'module example.com/examples\n\ngo 1.21\n' >"$ft/examples/go.mod"
for d in alpha v3/alpha alpha/core; do
	mkdir -p "$ft/$d"
	printf 'module example.com/%s\n\ngo 1.21\n\nrequire github.com/gofiber/fiber/v2 v2.0.0\n\nreplace github.com/gofiber/fiber/v2 => %s\n' \
		"$d" "$(realpath --relative-to="$ft/$d" "$ft/fiberv2")" >"$ft/$d/go.mod"
	printf 'package x\n' >"$ft/$d/x.go"
done
# fiberv2 is a module of the tree too; it imports nothing, so it passes as a "v2 adapter".
MODULES_ROOT="$ft" "$here/fiber_versions.sh" >/dev/null 2>&1 || fail "fiber_versions: a tree importing no Fiber failed"
printf 'package x\n\nimport _ "github.com/gofiber/fiber/v2"\n' >"$ft/alpha/x.go"
MODULES_ROOT="$ft" "$here/fiber_versions.sh" >/dev/null 2>&1 || fail "fiber_versions: a v2 adapter importing Fiber v2 failed"
for d in v3/alpha alpha/core; do
	cp "$ft/alpha/x.go" "$ft/$d/x.go"
	out="$(MODULES_ROOT="$ft" "$here/fiber_versions.sh" 2>&1)" && fail "fiber_versions: $d importing Fiber v2 passed"
	grep -q "$d compiles" <<<"$out" || fail "fiber_versions: the failure does not name $d: $out"
	printf 'package x\n' >"$ft/$d/x.go"
done
echo "fiber_versions_test: ok"
