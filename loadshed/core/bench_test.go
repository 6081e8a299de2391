package core

import (
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
)

func BenchmarkAdmit(b *testing.B) {
	for _, tc := range []struct {
		name string
		load float64
	}{{"accept", 0.5}, {"reject", 1}, {"band", 0.925}} {
		b.Run(tc.name, func(b *testing.B) {
			e := NewEngine(testConfig{Signal: coretest.NewFixedLoad(tc.load), Smoothing: 1, DisableMetrics: true}.WithDefaults(testDefaults), nil)
			b.Cleanup(func() { _ = e.Close() })
			b.ReportAllocs()
			for b.Loop() {
				e.Admit(false)
			}
		})
	}
}

func BenchmarkPolicyShed(b *testing.B) {
	p := Policy{Lower: 0.9, Upper: 0.95, CriticalLower: 0.98, CriticalUpper: 1}
	n := 0
	for i := 0; i < b.N; i++ {
		if p.Shed(0.925, false, float64(i&1023)/1024) {
			n++
		}
	}
	if n == 0 {
		b.Fatal("never shed")
	}
}

// BenchmarkSignalLoad is the sampler's cost of one reading: at the default 20ms interval the sampler takes 50
// readings a second, so 50·ns/op is its CPU time per second.
func BenchmarkSignalLoad(b *testing.B) {
	for _, tc := range []struct {
		name string
		sig  Signal
	}{
		{"cpu", &CPU{usage: processUsage, capacity: 1, perProcess: true, now: time.Now, sleep: func(time.Duration) {}}},
		{"sched_latency", NewSchedLatency(0)},
		{"default", NewMax(&CPU{usage: processUsage, capacity: 1, perProcess: true, now: time.Now, sleep: func(time.Duration) {}}, NewSchedLatency(0))},
		{"default_detected", DefaultSignal(0)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := tc.sig.Load(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.sig.Load(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
