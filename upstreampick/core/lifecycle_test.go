package core

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

// TestContextStopsTheHealthGoroutine cancels Config.Context: the health goroutine ends, the metrics are
// unregistered, idle connections are closed and no goroutine is left; requests are still answered.
func TestContextStopsTheHealthGoroutine(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		before := goleak.IgnoreCurrent()

		ctx, cancel := context.WithCancel(context.Background())
		reg := prometheus.NewRegistry()
		cfg := testConfig(addrA)
		cfg.Dial, cfg.Context, cfg.Registerer = n.Dial, ctx, reg
		p := newEngine(cfg)
		time.Sleep(3*cfg.HealthInterval + cfg.HealthInterval/2) // between rounds
		synctest.Wait()
		if body, err := doPath(p, "/"); err != nil || body != addrA {
			t.Fatalf("body %q, error %v", body, err)
		}
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 1 {
			t.Fatalf("tier series %d, want 1", n)
		}
		dials := n.Dials(addrA)

		cancel()
		synctest.Wait()
		select {
		case <-p.done:
		default:
			t.Fatal("the health goroutine is still running after Context is done")
		}
		if n := testutil.CollectAndCount(reg); n != 0 {
			t.Fatalf("%d series after Context is done, want 0", n)
		}
		time.Sleep(10 * cfg.HealthInterval)
		if got := n.Dials(addrA); got != dials {
			t.Fatalf("%d dials after Context is done, want none", got-dials)
		}
		// Idle connections were closed, so the cleaners end too.
		goleak.VerifyNone(t, before)
		if err := do(p); err != nil {
			t.Fatalf("request after Context is done: %v", err)
		}
		_ = p.Close() // idempotent after the Context's close
	})
}

func TestCloseIsIdempotentAndStopsHealth(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		p := picker(n, testConfig(addrA))
		eventually(t, "measured", func() bool { return allSampled(p) })
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case <-p.done:
		default:
			t.Fatal("the health goroutine is still running after Close")
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		// Requests still go to the last pickable set.
		if err := do(p); err != nil {
			t.Fatalf("request after Close: %v", err)
		}
	})
}
