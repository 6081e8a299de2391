// Package itest gates integration tests on the real servers they need.
//
// A test that needs Prometheus, HAProxy, iptables or root calls Require. On a developer's machine a missing
// prerequisite skips the test with the reason; with FIBERGUARD_INTEGRATION=1 (set by .ci/run) it fails instead,
// so CI never reports a skipped integration test as a pass.
package itest

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// Enabled reports whether integration tests are mandatory (FIBERGUARD_INTEGRATION=1).
func Enabled() bool { return os.Getenv("FIBERGUARD_INTEGRATION") == "1" }

// Require skips (or, when integration tests are mandatory, fails) t unless ok holds.
func Require(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if Enabled() {
		t.Fatalf("integration prerequisite missing: %s (FIBERGUARD_INTEGRATION=1)", why)
	}
	t.Skipf("skipping: %s; set FIBERGUARD_INTEGRATION=1 to make this a failure", why)
}

// RequireBinary returns the path of the named program, or skips/fails t when it is not installed, naming the
// Debian package to install.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Require(t, err == nil, name+" is not installed (apt-get install "+debianPackage(name)+")")
	return p
}

// debianPackage returns the Debian package that installs the named program.
func debianPackage(name string) string {
	switch name {
	case "iptables", "iptables-nft", "iptables-legacy":
		return "iptables"
	case "ip", "tc":
		return "iproute2"
	case "nice", "env", "sleep":
		return "coreutils"
	}
	return name // prometheus, haproxy, nginx, ...
}

// RequireRoot skips/fails t unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	Require(t, os.Geteuid() == 0, "needs root")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for a server started as another process.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
