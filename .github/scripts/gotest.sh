#!/usr/bin/env bash
# Runs each module's tests alone (GOWORK=off, as `go get` users build it), every module even after a failure,
# then lists every skipped test with its reason and the modules that failed. A plain `go test` prints only "ok"
# for a package whose integration tests skipped; the summary says which ones skipped and why.
#
#   gotest.sh [go test flags]    e.g. gotest.sh -race -count=1 -timeout 30m
#
# Exit status 1 when a module failed. MODULES_ROOT selects another tree (for modules_test.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${MODULES_ROOT:-$(cd "$here/../.." && pwd)}"
modules="$(MODULES_ROOT="$root" "$here/modules.sh")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && GOWORK=off go build -o "$tmp/testreport" testreport.go)
: >"$tmp/skips"

failed=()
for m in $modules; do
	echo "=== module $m"
	# pipefail: the module fails when go test fails, whatever the report does.
	if ! (cd "$root/$m" && GOWORK=off go test -json "$@" ./... | "$tmp/testreport" -skips "$tmp/skips"); then
		failed+=("$m")
	fi
done

skipped="$(grep -c '^--- SKIP: ' "$tmp/skips" || true)"
echo
if [ "$skipped" -eq 0 ]; then
	echo "=== skipped tests: none"
else
	echo "=== skipped tests: $skipped"
	cat "$tmp/skips"
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== FAIL: ${failed[*]}"
	exit 1
fi
echo "=== ok: every module passed"
