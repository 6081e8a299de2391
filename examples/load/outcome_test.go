package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestClassifySplitsRejectionsByModule(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{Port: 51234},
		Addr: &net.TCPAddr{Port: 8080}, Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name string
		in   result
		want outcome
	}{
		{"200", result{status: 200}, outcome{kind: kindOK}},
		{"loadshed", result{status: 503, rejectedBy: "loadshed/default"}, outcome{kind: kindRejected, module: "loadshed"}},
		{"throttle", result{status: 503, rejectedBy: "throttle/gateway"}, outcome{kind: kindRejected, module: "throttle"}},
		{"upstreampick", result{status: 502, rejectedBy: "upstreampick/api"}, outcome{kind: kindRejected, module: "upstreampick"}},
		{"a 429 from a custom OnReject is still the module's", result{status: 429, rejectedBy: "throttle/x"},
			outcome{kind: kindRejected, module: "throttle"}},
		{"a name holding a slash", result{status: 503, rejectedBy: "loadshed/a/b"}, outcome{kind: kindRejected, module: "loadshed"}},
		{"no slash", result{status: 503, rejectedBy: "mymodule"}, outcome{kind: kindRejected, module: "mymodule"}},
		{"spaces", result{status: 503, rejectedBy: " loadshed /default"}, outcome{kind: kindRejected, module: "loadshed"}},
		{"a module name that would break a key=value line", result{status: 503, rejectedBy: "my mod=x\u00e9/n"},
			outcome{kind: kindRejected, module: "my_mod_x_"}},
		{"empty module", result{status: 503, rejectedBy: "/default"}, outcome{kind: kindRejected, module: "(unnamed)"}},
		{"long module", result{status: 503, rejectedBy: "m234567890123456789012345678901234567890/x"},
			outcome{kind: kindRejected, module: "m2345678901234567890123456789012"}},
		{"503 without the header", result{status: 503}, outcome{kind: kindUnavailable}},
		{"404", result{status: 404}, outcome{kind: kindOtherStatus, status: 404}},
		{"204 is not a 200", result{status: 204}, outcome{kind: kindOtherStatus, status: 204}},
		{"fasthttp timeout", result{err: fasthttp.ErrTimeout}, outcome{kind: kindTimeout}},
		{"dial timeout", result{err: fmt.Errorf("dialing: %w", fasthttp.ErrDialTimeout)}, outcome{kind: kindTimeout}},
		{"net timeout", result{err: &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}}, outcome{kind: kindTimeout}},
		{"reset, without its addresses", result{err: fmt.Errorf("x: %w", reset)},
			outcome{kind: kindError, err: "read: connection reset by peer"}},
		{"closed", result{err: fasthttp.ErrConnectionClosed}, outcome{kind: kindError, err: fasthttp.ErrConnectionClosed.Error()}},
		{"an error wins over a status", result{status: 200, err: errors.New("boom")}, outcome{kind: kindError, err: "boom"}},
	} {
		if got := classify(tc.in); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestCountsStayBoundedWhateverTheServerSends(t *testing.T) {
	c := newCounts()
	const n = 1000
	for i := range n {
		c.add(outcome{kind: kindRejected, module: fmt.Sprintf("m%d", i)}, time.Millisecond)
		c.add(outcome{kind: kindOtherStatus, status: 100 + i%900}, time.Millisecond)
		c.add(outcome{kind: kindError, err: fmt.Sprintf("error %d %0200d", i, 0)}, time.Millisecond)
	}
	if len(c.rejected) > maxModules+1 || len(c.statuses) > maxStatuses+1 || len(c.errTexts) > maxErrors+1 {
		t.Fatalf("maps grew: %d modules, %d statuses, %d errors", len(c.rejected), len(c.statuses), len(c.errTexts))
	}
	if sum(c.rejected) != n || sum(c.statuses) != n || sum(c.errTexts) != n || c.errors != n {
		t.Fatalf("lost counts: %d rejected, %d statuses, %d error texts, %d errors", sum(c.rejected), sum(c.statuses),
			sum(c.errTexts), c.errors)
	}
	if c.rejected["m0"] != 1 || c.rejected[otherKey] != n-maxModules {
		t.Fatalf("the first modules keep their names, the rest go to %s: %v", otherKey, c.rejected)
	}
	for text := range c.errTexts {
		if len(text) > maxErrorText {
			t.Fatalf("error text of %d bytes kept", len(text))
		}
	}
	if c.answered() != 3*n || c.all.n != 2*n {
		t.Fatalf("answered %d (want %d), latencies %d (want %d: errors have none)", c.answered(), 3*n, c.all.n, 2*n)
	}
}
