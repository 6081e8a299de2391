#!/usr/bin/env bash
# The compatibility gate (.github/tools/apicompat): a library module's exported API against its previous release.
#
#   apicompat.sh MODULE TAG [VERSION]   compare MODULE on this tree with TAG, VERSION being the version to release
#   apicompat.sh --all                  every library module against its latest tag (none yet: said, and passed)
#
# An incompatible change fails unless the major version changes or the module's "## MODULE" section of
# CHANGELOG.md gained, since TAG, a "Breaking" entry naming it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd "$root/.github/tools" && GOWORK=off go build -o "$bin/apicompat" ./apicompat)

if [ "${1:-}" != "--all" ]; then
	[ $# -ge 2 ] || { echo "usage: apicompat.sh MODULE TAG [VERSION] | --all" >&2; exit 2; }
	exec "$bin/apicompat" -repo "$root" -module "$1" -since "$2" -version "${3:-}"
fi

status=0
untagged=()
while IFS= read -r m; do
	prev="$(git -C "$root" tag --list "$m/v*" --sort=-v:refname | head -n1)"
	if [ -z "$prev" ]; then
		untagged+=("$m")
		continue
	fi
	"$bin/apicompat" -repo "$root" -module "$m" -since "$prev" || status=1
done < <("$here/modules.sh" --library-dirs)
if [ ${#untagged[@]} -gt 0 ]; then
	echo "apicompat: no release tag yet, nothing to compare: ${untagged[*]}"
fi
exit "$status"
