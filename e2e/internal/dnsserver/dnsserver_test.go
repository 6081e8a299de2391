package dnsserver

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAnswersThroughGoResolver: Go's own resolver, through Resolver, gets the records as they are set, the
// targets of SRV records, no data for a known name's other types, and NXDOMAIN for an unknown name.
func TestAnswersThroughGoResolver(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	r := s.Resolver()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s.SetAddrs("api.test", "127.0.0.1", "127.0.0.2", "::1")
	addrs, err := r.LookupHost(ctx, "API.test.")
	slices.Sort(addrs)
	if err != nil || !slices.Equal(addrs, []string{"127.0.0.1", "127.0.0.2", "::1"}) {
		t.Fatalf("LookupHost = %v, %v", addrs, err)
	}
	s.SetAddrs("api.test", "127.0.0.3")
	if addrs, err := r.LookupHost(ctx, "api.test."); err != nil || !slices.Equal(addrs, []string{"127.0.0.3"}) {
		t.Fatalf("LookupHost after a change = %v, %v", addrs, err)
	}

	s.SetAddrs("w.test", "127.0.0.9")
	s.SetSRV("_http._tcp.api.test", SRV{Target: "w.test", Port: 8080})
	_, srvs, err := r.LookupSRV(ctx, "", "", "_http._tcp.api.test.")
	if err != nil || len(srvs) != 1 || srvs[0].Target != "w.test." || srvs[0].Port != 8080 {
		t.Fatalf("LookupSRV = %v, %v", srvs, err)
	}

	var de *net.DNSError
	if _, err := r.LookupHost(ctx, "gone.test."); !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("LookupHost of an unknown name: %v, want not found", err)
	}
	if _, _, err := r.LookupSRV(ctx, "", "", "api.test."); !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("LookupSRV of a name without SRV records: %v, want not found", err)
	}
	s.SetAddrs("api.test")
	if _, err := r.LookupHost(ctx, "api.test."); !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("LookupHost of a removed name: %v, want not found", err)
	}
	if n := s.Queries("api.test."); n < 4 {
		t.Fatalf("%d queries counted for api.test, want at least one per lookup", n)
	}
}
