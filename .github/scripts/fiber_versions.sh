#!/usr/bin/env bash
# Proves that each library module compiles only the framework it is for: a v3 adapter (v3/<name>) no Fiber v2
# package, a v2 adapter (<name>) no Fiber v3 package, a core (<name>/core) no Fiber at all, and a net/http
# adapter (nethttp/<name>) neither Fiber nor fasthttp. It reads the
# packages each module's build and tests would compile, with the module alone (GOWORK=off), as `go get` users
# build it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${MODULES_ROOT:-$(cd "$here/../.." && pwd)}"
support='^(examples|bench|e2e)$'
status=0
checked=0

while IFS= read -r m; do
	[ -n "$m" ] || continue
	if grep -Eq "$support" <<<"$m"; then
		continue
	fi
	case "$m" in
	nethttp/*) forbidden='^github.com/(gofiber/|valyala/fasthttp(/|$))' what="Fiber or fasthttp" ;;
	v3/*) forbidden='^github.com/gofiber/fiber/v2(/|$)' what="Fiber v2" ;;
	*/core) forbidden='^github.com/gofiber/' what="any Fiber" ;;
	*) forbidden='^github.com/gofiber/fiber/v3(/|$)' what="Fiber v3" ;;
	esac
	deps="$(cd "$root/$m" && GOWORK=off go list -deps -test ./...)"
	if bad="$(grep -E "$forbidden" <<<"$deps")"; then
		echo "fiber_versions: $m compiles $what:" >&2
		sed 's/^/  /' <<<"$bad" >&2
		status=1
	fi
	checked=$((checked + 1))
done < <(MODULES_ROOT="$root" "$here/modules.sh")

if [ "$status" -eq 0 ]; then
	echo "fiber_versions: ok ($checked library modules)"
fi
exit "$status"
