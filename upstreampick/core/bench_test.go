package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
)

// listeners opens n listeners on 127.0.0.1 that accept and close connections, for health dials to succeed.
func listeners(b *testing.B, n int) []string {
	b.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		b.Cleanup(func() { _ = ln.Close() })
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

func BenchmarkPick(b *testing.B) {
	for _, mode := range []Mode{ModeLatency, ModeLeastPending, ModeRandom} {
		for _, n := range []int{3, 64} {
			b.Run(fmt.Sprintf("%v/%d", mode, n), func(b *testing.B) {
				p := newEngine(config{
					Servers:        listeners(b, n),
					Mode:           mode,
					HealthInterval: time.Hour,
					Registerer:     prometheus.NewRegistry(),
				})
				defer func() { _ = p.Close() }()
				picks(b, p, n)
			})
		}
	}
}

// picks waits (bounded) until p has n measured upstreams, then times Pick.
func picks(b *testing.B, p *Engine, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for (len(p.Status().Upstreams) != n || !allSampled(p)) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := p.Pick(); !ok {
			b.Fatal("nothing pickable")
		}
	}
	b.StopTimer()
}

// BenchmarkPickDiscovered is BenchmarkPick with every upstream discovered from SRV records that are resolved
// every 10 ms, in a new order each time, while the picks run: discovery costs a pick nothing.
func BenchmarkPickDiscovered(b *testing.B) {
	for _, mode := range []Mode{ModeLatency, ModeLeastPending, ModeRandom} {
		for _, n := range []int{3, 64} {
			b.Run(fmt.Sprintf("%v/%d", mode, n), func(b *testing.B) {
				dns := memnet.NewDNS()
				var recs []*net.SRV
				for _, addr := range listeners(b, n) {
					host, port, _ := net.SplitHostPort(addr)
					p, _ := strconv.Atoi(port)
					recs = append(recs, &net.SRV{Target: host, Port: uint16(p)})
				}
				dns.SetSRV("_bench._tcp.test", recs...)
				p := newEngine(config{
					Discover:       []Discovery{DNSSRV("_bench._tcp.test", "http", 10*time.Millisecond)},
					Resolver:       shuffled{dns},
					Mode:           mode,
					HealthInterval: time.Hour,
					Registerer:     prometheus.NewRegistry(),
				})
				defer func() { _ = p.Close() }()
				picks(b, p, n)
				if d := p.Status().Discovery[0]; d.Resolutions < 2 || d.Errors != 0 || len(d.Addresses) != n {
					b.Fatalf("discovery %+v, want resolutions without error during the benchmark", d)
				}
			})
		}
	}
}

// shuffled returns its resolver's SRV records in a new order each time.
type shuffled struct{ *memnet.DNS }

func (s shuffled) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	cname, recs, err := s.DNS.LookupSRV(ctx, service, proto, name)
	rand.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return cname, recs, err
}
