#!/usr/bin/env bash
# The install check (.github/tools/installcheck): every library module released with `release.sh --dry-run` in
# a throwaway clone, served from a file-system module proxy, and installed, built, vetted and tidied from it
# the way users do, with GOWORK=off and no replace; then three broken releases that must fail. Arguments go to
# installcheck (-modules a,b; -work DIR).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd "$here/../tools" && GOWORK=off go build -o "$bin/installcheck" ./installcheck)
cd "$here/../.."
"$bin/installcheck" -mutations "$@"
