package core

import (
	"testing"
)

// BenchmarkWindowAcquireRelease is the admission cost: one TryAcquire and one Release.
func BenchmarkWindowAcquireRelease(b *testing.B) {
	w := NewWindow(MaxWindow, MaxWindow)
	b.ReportAllocs()
	for b.Loop() {
		if w.TryAcquire() {
			w.Release()
		}
	}
}

// BenchmarkWindowAcquireReleaseParallel is the admission cost with every CPU admitting into one window.
func BenchmarkWindowAcquireReleaseParallel(b *testing.B) {
	w := NewWindow(MaxWindow, MaxWindow)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if w.TryAcquire() {
				w.Release()
			}
		}
	})
}

// BenchmarkWindowRejectParallel is the cost of turning a request away from a full window.
func BenchmarkWindowRejectParallel(b *testing.B) {
	w := NewWindow(1, 1)
	w.TryAcquire()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if w.TryAcquire() {
				b.Error("admitted into a full window")
			}
		}
	})
}

// BenchmarkEngineTryAcquire is the admission the adapters make per request: the window and the counter.
func BenchmarkEngineTryAcquire(b *testing.B) {
	e := NewEngine(Config[any, any]{WindowMin: MaxWindow, WindowMax: MaxWindow, DisableMetrics: true}.WithDefaults(testDefaults), nil)
	defer e.Close()
	b.ReportAllocs()
	for b.Loop() {
		if release, ok := e.TryAcquire(); ok {
			release()
		}
	}
}

// BenchmarkEngineReject is the admission of a request into a full window.
func BenchmarkEngineReject(b *testing.B) {
	e := NewEngine(Config[any, any]{WindowMin: 1, WindowMax: 1, DisableMetrics: true}.WithDefaults(testDefaults), nil)
	defer e.Close()
	e.TryAcquire()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := e.TryAcquire(); ok {
			b.Fatal("admitted into a full window")
		}
	}
}
