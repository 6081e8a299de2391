#!/usr/bin/env bash
# Drafts the next release of one library module, tagged <module>/vX.Y.Z (the Go convention for a module in a
# subdirectory), from the commits that touched the module since its last tag.
#
#   release-draft.sh MODULE            print "tag=<module>/vX.Y.Z" and the release notes; change nothing
#   release-draft.sh MODULE --publish  also create or update the module's draft release on GitHub (needs gh, GH_TOKEN)
#
# Bump rules: a commit whose message contains "BREAKING CHANGE" (or "!:" in its subject) bumps the major version
# (the minor one before v1); a commit whose subject says "fix" bumps the patch; any other commit bumps the minor.
# No commit since the last tag: no release ("tag=" empty).
set -euo pipefail

module="${1:?usage: release-draft.sh MODULE [--publish]}"
publish="${2:-}"
module="${module%/}"

last="$(git tag --list "$module/v*" --sort=-v:refname | head -n1)"
if [ -n "$last" ]; then
	range="$last..HEAD"
	version="${last#"$module"/v}"
else
	range="HEAD"
	version="0.0.0"
fi
IFS=. read -r major minor patch <<<"$version"

# A module nested in this one's directory (alpha/core in alpha) is released on its own: its commits are not
# this module's.
paths=("$module/")
while IFS= read -r gomod; do
	nested="${gomod%/go.mod}"
	[ "$nested" = "$module" ] || paths+=(":(exclude)$nested/")
done < <(git ls-files -- "$module/**/go.mod" "$module/go.mod")

subjects="$(git log --no-merges --format='%s' "$range" -- "${paths[@]}")"
if [ -z "$subjects" ]; then
	echo "tag="
	exit 0
fi
bodies="$(git log --no-merges --format='%s%n%b' "$range" -- "${paths[@]}")"

bump=patch
if grep -qE 'BREAKING CHANGE|^[^ ]*!:' <<<"$bodies"; then
	bump=major
elif grep -qviE '(^|[^a-z])fix' <<<"$subjects"; then
	bump=minor
fi
if [ "$bump" = major ] && [ "$major" = 0 ]; then
	bump=minor # before v1, breaking changes bump the minor version
fi
case "$bump" in
major) major=$((major + 1)) minor=0 patch=0 ;;
minor) minor=$((minor + 1)) patch=0 ;;
patch) patch=$((patch + 1)) ;;
esac
tag="$module/v$major.$minor.$patch"
notes="$(sed 's/^/- /' <<<"$subjects")"

echo "tag=$tag"
echo "$notes"

if [ "$publish" = "--publish" ]; then
	# One draft per module: retag an existing draft of this module, or create it.
	existing="$(gh release list --limit 100 --json tagName,isDraft \
		--jq ".[] | select(.isDraft and (.tagName | startswith(\"$module/v\"))) | .tagName" | head -n1)"
	if [ -n "$existing" ]; then
		gh release edit "$existing" --tag "$tag" --title "$module v$major.$minor.$patch" --notes "$notes" --draft
	else
		gh release create "$tag" --draft --title "$module v$major.$minor.$patch" --notes "$notes" \
			--target "${GITHUB_SHA:-$(git rev-parse HEAD)}"
	fi
fi
