package main

import (
	"errors"
	"net"
	"os"
	"strings"

	"github.com/valyala/fasthttp"
)

// rejectedByHeader is set by every fiberguard module on the requests it rejects: "<module>/<name>".
const rejectedByHeader = "Fiberguard-Rejected-By"

// result is what one request got: a status and its Fiberguard-Rejected-By header, or an error.
type result struct {
	status     int
	rejectedBy string
	err        error
}

type kind int

const (
	kindOK          kind = iota // 200
	kindRejected                // any status with Fiberguard-Rejected-By
	kindUnavailable             // 503 without it: overloaded, but not by a fiberguard module's decision
	kindOtherStatus             // any other status
	kindTimeout                 // no answer within -timeout
	kindError                   // no answer: refused, reset, closed
)

// outcome is a result sorted for counting.
type outcome struct {
	kind   kind
	module string // kindRejected: the module part of the header
	status int    // kindOtherStatus
	err    string // kindError: the error without its addresses, so that equal failures count together
}

// classify sorts a result. The header decides a rejection whatever the status, because a module's OnReject may
// answer 429 or anything else.
func classify(r result) outcome {
	switch {
	case r.err != nil && isTimeout(r.err):
		return outcome{kind: kindTimeout}
	case r.err != nil:
		return outcome{kind: kindError, err: errorText(r.err)}
	case r.rejectedBy != "":
		return outcome{kind: kindRejected, module: moduleOf(r.rejectedBy)}
	case r.status == fasthttp.StatusOK:
		return outcome{kind: kindOK}
	case r.status == fasthttp.StatusServiceUnavailable:
		return outcome{kind: kindUnavailable}
	default:
		return outcome{kind: kindOtherStatus, status: r.status}
	}
}

// moduleOf returns the module part of "<module>/<name>" (all of it without a '/'), trimmed, at most 32 bytes,
// and with any byte but letters, digits, '-', '_' and '.' replaced by '_', so that it stays one word in a
// key=value line.
func moduleOf(header string) string {
	m, _, _ := strings.Cut(header, "/")
	m = strings.TrimSpace(m)
	if len(m) > 32 {
		m = m[:32]
	}
	if m == "" {
		return "(unnamed)"
	}
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_.", r) {
			return r
		}
		return '_'
	}, m)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// errorText drops the addresses of a network error ("read tcp 127.0.0.1:51234->127.0.0.1:8080: read: connection
// reset by peer" → "read: connection reset by peer"): the local port differs on every connection.
func errorText(err error) string {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Err == nil {
		return err.Error()
	}
	inner := oe.Err
	var se *os.SyscallError
	if errors.As(inner, &se) {
		inner = se.Err
	}
	return oe.Op + ": " + inner.Error()
}
