#!/usr/bin/env bash
# Releases library modules at one version, in dependency order, so that every tag it makes can be installed with
# `go get`:
#
#   release.sh [--dry-run] VERSION [MODULE...]     (all library modules when none are named)
#
# 1. Plans everything before it changes anything, and refuses (naming the module and the requirement) when:
#    - the work tree is not clean, VERSION is not vX.Y.Z[-pre] below v2, or a module is not a library module;
#    - a module already has the tag, or a newer one;
#    - a module requires a sibling (another module of this repository) at a version that is neither tagged nor
#      being tagged in this run, or at a tag older than the sibling's code on this commit;
#    - a module's exported API breaks its previous release and the CHANGELOG names no "Breaking" change for it
#      (.github/tools/apicompat).
# 2. Tags the modules that require no sibling of the run (the cores), <module>/VERSION, on this commit.
# 3. Commits, for the modules that require them, the requirement of each sibling of the run at VERSION, then
#    tags those modules on that commit; and so on for longer chains.
# 4. Pushes the commit and the tags together (git push --atomic) to $RELEASE_REMOTE (origin) — unless
#    --dry-run, which does all of the above in the clone it runs in and pushes nothing.
#
# The `replace` directives to local paths stay: they serve this repository's own builds (GOWORK=off) and Go
# ignores them in a dependency; what users get is the requirement, and that names a tag.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

die() {
	echo "release: $*" >&2
	exit 1
}
usage() {
	echo "usage: release.sh [--dry-run] VERSION [MODULE...]" >&2
	exit 2
}

dry=0
if [ "${1:-}" = "--dry-run" ]; then
	dry=1
	shift
fi
[ $# -ge 1 ] || usage
version="$1"
shift
case "$version" in -*) usage ;; esac
[[ "$version" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
	die "VERSION must be vMAJOR.MINOR.PATCH[-PRERELEASE], got '$version'"
major="${BASH_REMATCH[1]}"
[ "$major" -le 1 ] || die "VERSION $version needs module paths ending in /v$major; release v0 or v1 versions"

[ -z "$(git status --porcelain)" ] || die "the work tree has uncommitted changes; commit or stash them first"

mapfile -t libraries < <("$here/modules.sh" --library-dirs)
declare -A dir_of path_of
for d in "${libraries[@]}"; do
	p="$(awk '$1 == "module" { print $2; exit }' "$d/go.mod")"
	[ -n "$p" ] || die "$d/go.mod has no module line"
	path_of["$d"]="$p"
	dir_of["$p"]="$d"
done

if [ $# -eq 0 ]; then
	modules=("${libraries[@]}")
else
	modules=()
	for m in "$@"; do
		m="${m%/}"
		[ -n "${path_of[$m]:-}" ] || die "$m is not a library module (one of: ${libraries[*]})"
		modules+=("$m")
	done
fi
declare -A in_run
for m in "${modules[@]}"; do in_run["$m"]=1; done

# requires DIR: "path version" of each requirement in DIR/go.mod (block and single-line forms).
requires() {
	awk '
		$1 == "require" && $2 == "(" { block = 1; next }
		block && $1 == ")" { block = 0; next }
		block && NF >= 2 && $1 !~ /^\/\// { print $1, $2; next }
		$1 == "require" && NF >= 3 { print $2, $3 }
	' "$1/go.mod"
}
tagged() { git rev-parse -q --verify "refs/tags/$1" >/dev/null; }

# Plan: each module's siblings, its level (0: requires no sibling of the run), and every refusal.
declare -A level siblings
problems=()
for m in "${modules[@]}"; do
	tag="$m/$version"
	tagged "$tag" && problems+=("$m: tag $tag exists already")
	latest="$(git tag --list "$m/v*" --sort=-v:refname | head -n1)"
	if [ -n "$latest" ] && [ "$latest" != "$tag" ]; then
		newest="$(printf '%s\n%s\n' "${latest#"$m"/}" "$version" | sort -V | tail -n1)"
		[ "$newest" = "$version" ] || problems+=("$m: $version is not newer than its latest tag $latest")
	fi
	sibs=""
	while read -r p v; do
		s="${dir_of[$p]:-}"
		[ -n "$s" ] || continue
		if [ -n "${in_run[$s]:-}" ]; then
			sibs="$sibs $s"
			continue
		fi
		if ! tagged "$s/$v"; then
			problems+=("$m requires $p $v, which is not tagged ($s/$v does not exist) and not being released in this run: release $s with it, or require a tagged version")
		elif ! git diff --quiet "$s/$v" HEAD -- ":(glob)$s/*.go" ":(glob)$s/**/*.go" "$s/go.mod"; then
			problems+=("$m requires $p $v, but $s has changed since $s/$v: release $s with it")
		fi
	done < <(requires "$m")
	siblings["$m"]="$sibs"
done

# Levels, by rounds: a module's level is one above its highest sibling of the run.
remaining=("${modules[@]}")
lvl=0
while [ ${#remaining[@]} -gt 0 ]; do
	next=()
	placed=()
	for m in "${remaining[@]}"; do
		ready=1
		for s in ${siblings[$m]}; do
			if [ -z "${level[$s]:-}" ] || [ "${level[$s]}" -ge "$lvl" ]; then ready=0; fi
		done
		if [ $ready -eq 1 ]; then placed+=("$m"); else next+=("$m"); fi
	done
	[ ${#placed[@]} -gt 0 ] || die "the requirements of ${next[*]} form a cycle"
	for m in "${placed[@]}"; do level["$m"]=$lvl; done
	remaining=("${next[@]}")
	lvl=$((lvl + 1))
done
levels=$lvl

# The compatibility gate, against each module's previous release (FIBERGUARD_RELEASE_GATE=0 leaves it to the
# caller: the install check runs it on its own).
for m in "${modules[@]}"; do
	[ "${FIBERGUARD_RELEASE_GATE:-1}" != 0 ] || break
	prev="$(git tag --list "$m/v*" --sort=-v:refname | head -n1)"
	[ -n "$prev" ] || continue
	if ! out="$("$here/apicompat.sh" "$m" "$prev" "$version" 2>&1)"; then
		problems+=("$m: $out")
	fi
done

if [ ${#problems[@]} -gt 0 ]; then
	echo "release: refusing to release $version; nothing was tagged:" >&2
	printf '  %s\n' "${problems[@]}" >&2
	exit 1
fi

# Identity for the release commit where the clone has none (CI, a throwaway clone).
if [ -z "$(git config user.email || true)" ]; then
	export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-fiberguard release}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-release@fiberguard.invalid}"
	export GIT_COMMITTER_NAME="${GIT_COMMITTER_NAME:-$GIT_AUTHOR_NAME}" GIT_COMMITTER_EMAIL="${GIT_COMMITTER_EMAIL:-$GIT_AUTHOR_EMAIL}"
fi

tags=()
for ((l = 0; l < levels; l++)); do
	batch=()
	for m in "${modules[@]}"; do [ "${level[$m]}" -eq $l ] && batch+=("$m"); done
	if [ $l -gt 0 ]; then
		for m in "${batch[@]}"; do
			for s in ${siblings[$m]}; do
				(cd "$m" && go mod edit -require="${path_of[$s]}@$version")
			done
			git add "$m/go.mod"
		done
		if ! git diff --cached --quiet; then
			git commit -q -m "release $version: ${batch[*]} require their siblings at $version"
			echo "release: committed $(git rev-parse --short HEAD): ${batch[*]} require their siblings at $version"
		fi
	fi
	for m in "${batch[@]}"; do
		git tag "$m/$version"
		tags+=("$m/$version")
		echo "release: tagged $m/$version at $(git rev-parse --short HEAD)"
	done
done

if [ $dry -eq 1 ]; then
	echo "release: dry run: ${#tags[@]} tags made in $root, nothing pushed"
	exit 0
fi
remote="${RELEASE_REMOTE:-origin}"
branch="$(git symbolic-ref --short HEAD)"
git push --atomic "$remote" "HEAD:refs/heads/$branch" "${tags[@]/#/refs/tags/}"
echo "release: pushed ${#tags[@]} tags and $branch to $remote"
