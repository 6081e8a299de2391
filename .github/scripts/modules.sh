#!/usr/bin/env bash
# Lists the Go modules of this repository, found from their go.mod files, so that workflows and the Makefile
# never need editing when a module is added.
#
#   modules.sh             one module directory per line, relative to the root ("loadshed", "examples", ...)
#   modules.sh --json      the same as a JSON array, for a GitHub Actions matrix
#   modules.sh --libraries only the modules users import (not examples, bench, e2e), as a JSON array
#   modules.sh --library-dirs  the same, one directory per line
set -euo pipefail

root="${MODULES_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
cd "$root"

# Modules that exist to demonstrate, measure or test the libraries; they are never released.
support='^(examples|bench|e2e)$'

list() {
	find . -name go.mod -type f \
		-not -path '*/.*/*' -not -path '*/testdata/*' -not -path '*/vendor/*' -not -path '*/node_modules/*' |
		sed -e 's|^\./||' -e 's|/\{0,1\}go.mod$||' |
		grep -v '^$' | LC_ALL=C sort
}

json() {
	local first=1
	printf '['
	while IFS= read -r m; do
		[ -n "$m" ] || continue
		if [ $first -eq 0 ]; then printf ','; fi
		printf '"%s"' "$m"
		first=0
	done
	printf ']\n'
}

case "${1:-}" in
"") list ;;
--json) list | json ;;
--libraries) list | { grep -Ev "$support" || true; } | json ;;
--library-dirs) list | { grep -Ev "$support" || true; } ;;
*)
	echo "usage: $0 [--json|--libraries|--library-dirs]" >&2
	exit 2
	;;
esac
