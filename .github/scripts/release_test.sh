#!/usr/bin/env bash
# Proves release.sh on a throwaway repository shaped like this one (a core, its adapter, a support module):
# its refusals change nothing, --dry-run tags in dependency order and pushes nothing, a real run pushes the
# commit and the tags together, and the compatibility gate stops an unannounced breaking change.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fail() {
	echo "release_test: FAIL: $*" >&2
	exit 1
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

repo="$tmp/repo"
mkdir -p "$repo/.github/scripts" "$repo/alpha/core" "$repo/examples"
cp "$here/release.sh" "$here/modules.sh" "$here/apicompat.sh" "$repo/.github/scripts/"
cp -r "$here/../tools" "$repo/.github/tools"
cd "$repo"
cat >alpha/core/go.mod <<'EOF'
module example.com/r/alpha/core

go 1.21
EOF
printf 'package core\n\nfunc Load() float64 { return 0 }\n' >alpha/core/core.go
cat >alpha/go.mod <<'EOF'
module example.com/r/alpha

go 1.21

require example.com/r/alpha/core v0.0.0

replace example.com/r/alpha/core => ./core
EOF
printf 'package alpha\n\nimport "example.com/r/alpha/core"\n\nfunc New() float64 { return core.Load() }\n' >alpha/alpha.go
printf 'module example.com/r/examples\n\ngo 1.21\n' >examples/go.mod
printf '# Changelog\n\n## alpha\n\n## alpha/core\n' >CHANGELOG.md
git init -q -b main
git config user.email ci@example.invalid
git config user.name ci
git add -A
git commit -qm first
git init -q --bare "$tmp/origin.git"
git remote add origin "$tmp/origin.git"
git push -q origin main

rel() { .github/scripts/release.sh "$@" 2>&1; }
notags() { [ -z "$(git tag)" ] || fail "$1: tags were made: $(git tag | tr '\n' ' ')"; }

# Refusals: nothing is tagged or committed.
head="$(git rev-parse HEAD)"
out="$(rel --dry-run v0.1.0 alpha)" && fail "an adapter requiring an untagged core was released: $out"
grep -q 'alpha requires example.com/r/alpha/core v0.0.0, which is not tagged (alpha/core/v0.0.0 does not exist) and not being released in this run' <<<"$out" ||
	fail "the refusal does not name the module and its requirement: $out"
grep -q 'nothing was tagged' <<<"$out" || fail "the refusal does not say nothing was tagged: $out"
notags "untagged core"
[ "$(git rev-parse HEAD)" = "$head" ] || fail "a refused release committed"
out="$(rel --dry-run v0.1.0 examples)" && fail "a support module was released: $out"
grep -q 'examples is not a library module' <<<"$out" || fail "support module: $out"
out="$(rel --dry-run 0.1 alpha)" && fail "a bad version was accepted: $out"
grep -q "VERSION must be vMAJOR.MINOR.PATCH" <<<"$out" || fail "bad version: $out"
out="$(rel --dry-run v2.0.0)" && fail "v2 without /v2 module paths was accepted: $out"
grep -q "needs module paths ending in /v2" <<<"$out" || fail "v2: $out"
echo "// dirty" >>alpha/alpha.go
out="$(rel --dry-run v0.1.0)" && fail "a dirty tree was released: $out"
grep -q "uncommitted changes" <<<"$out" || fail "dirty tree: $out"
git checkout -q alpha/alpha.go
notags "refusals"

# Dry run of every library module: the core is tagged first, then the adapter on a commit that requires it.
out="$(rel --dry-run v0.1.0)" || fail "dry run failed: $out"
[ "$(git tag | LC_ALL=C sort | tr '\n' ' ')" = "alpha/core/v0.1.0 alpha/v0.1.0 " ] || fail "dry-run tags: $(git tag | tr '\n' ' ')"
[ "$(git rev-parse alpha/core/v0.1.0)" = "$head" ] || fail "the core was not tagged on the starting commit"
[ "$(git rev-parse alpha/core/v0.1.0)" = "$(git rev-parse HEAD~1)" ] || fail "not one release commit after the core's tag"
[ "$(git rev-parse alpha/v0.1.0^{commit})" = "$(git rev-parse HEAD)" ] || fail "the adapter was not tagged on the release commit"
git show alpha/v0.1.0:alpha/go.mod | grep -q '^require example.com/r/alpha/core v0.1.0$' ||
	fail "the adapter's tag does not require the core's tag: $(git show alpha/v0.1.0:alpha/go.mod)"
git show alpha/core/v0.1.0:alpha/go.mod | grep -q 'alpha/core v0.0.0' || fail "the core's commit changed"
git show alpha/v0.1.0:alpha/go.mod | grep -q '^replace example.com/r/alpha/core => ./core$' || fail "the local replace was dropped"
grep -q "dry run: 2 tags made" <<<"$out" || fail "dry run summary: $out"
[ -z "$(git ls-remote --tags origin)" ] || fail "the dry run pushed tags"
[ "$(git ls-remote origin refs/heads/main | cut -f1)" = "$head" ] || fail "the dry run pushed main"
out="$(rel --dry-run v0.1.0 alpha/core)" && fail "an existing tag was released again: $out"
grep -q "alpha/core: tag alpha/core/v0.1.0 exists already" <<<"$out" || fail "existing tag: $out"
echo "release_test: refusals and dry run ok"

# An adapter alone, on its tagged core: released. A changed core must be released with it.
out="$(rel --dry-run v0.1.1 alpha)" || fail "adapter alone on a tagged core: $out"
printf 'package core\n\nfunc Load() float64 { return 1 }\n' >alpha/core/core.go
git commit -qam "core: change"
out="$(rel --dry-run v0.2.0 alpha)" && fail "an adapter was released on a stale core tag: $out"
grep -q "alpha requires example.com/r/alpha/core v0.1.0, but alpha/core has changed since alpha/core/v0.1.0" <<<"$out" || fail "stale core: $out"

# The compatibility gate: a removed function without a Breaking entry is refused, with one it is released.
printf 'package core\n\nfunc Load() float64 { return 1 }\n' >alpha/core/core.go
printf 'package alpha\n\nimport "example.com/r/alpha/core"\n\nfunc Make() float64 { return core.Load() }\n' >alpha/alpha.go
git commit -qam "alpha: rename New"
out="$(rel --dry-run v0.2.0)" && fail "an incompatible change was released: $out"
grep -q 'alpha: apicompat: alpha: incompatible with alpha/v0.1.1' <<<"$out" || fail "gate message: $out"
grep -q 'New: removed' <<<"$out" || fail "the gate does not name the change: $out"
printf '# Changelog\n\n## alpha\n- Breaking: `New` is now `Make`.\n\n## alpha/core\n' >CHANGELOG.md
git commit -qam "changelog"
out="$(rel v0.2.0)" || fail "release with a Breaking entry: $out"
for t in alpha/core/v0.2.0 alpha/v0.2.0; do
	git ls-remote --tags origin | grep -q "refs/tags/$t$" || fail "$t was not pushed: $out"
done
[ "$(git ls-remote origin refs/heads/main | cut -f1)" = "$(git rev-parse HEAD)" ] || fail "the release commit was not pushed"
git show alpha/v0.2.0:alpha/go.mod | grep -q '^require example.com/r/alpha/core v0.2.0$' || fail "v0.2.0 requirement"
echo "release_test: stale core, compatibility gate and push ok"
