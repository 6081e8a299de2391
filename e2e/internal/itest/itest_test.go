package itest

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB whose Skipf and Fatalf record the message and end only the function run runs,
// as they end a test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

// ended is what recorder panics with to end the function.
type ended struct{}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	panic(ended{})
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	panic(ended{})
}

// run calls f with r and returns once f returns or r ended it.
func (r *recorder) run(f func(testing.TB)) {
	defer func() {
		if v := recover(); v != nil && v != (ended{}) {
			panic(v)
		}
	}()
	f(r)
}

func TestRequireBinaryNamesTheDebianPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing is installed
	for _, tt := range []struct{ binary, pkg string }{
		{"iptables-nft", "iptables"},
		{"iptables", "iptables"},
		{"ip", "iproute2"},
		{"nice", "coreutils"},
		{"prometheus", "prometheus"},
		{"haproxy", "haproxy"},
	} {
		want := tt.binary + " is not installed (apt-get install " + tt.pkg + ")"
		for _, integration := range []string{"", "1"} {
			t.Setenv("FIBERGUARD_INTEGRATION", integration)
			r := &recorder{}
			r.run(func(tb testing.TB) {
				p := RequireBinary(tb, tt.binary)
				t.Errorf("RequireBinary(%q) = %q with an empty PATH, want a skip or a failure", tt.binary, p)
			})
			// A missing program skips on a laptop and fails in CI, with the same hint.
			if r.skipped != (integration == "") || r.failed != (integration == "1") || !strings.Contains(r.msg, want) {
				t.Errorf("RequireBinary(%q), FIBERGUARD_INTEGRATION=%q: skipped %v, failed %v, %q; want %q",
					tt.binary, integration, r.skipped, r.failed, r.msg, want)
			}
		}
	}
}
