// Package coretest holds what the tests of the core and of its Fiber adapters share: a Signal whose reading the
// test sets, and checks of the metrics a shedder exports. It is for tests only.
package coretest

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// FixedLoad is a Signal whose reading the test sets; safe for concurrent use.
type FixedLoad struct{ bits atomic.Uint64 }

// NewFixedLoad returns a FixedLoad reading v.
func NewFixedLoad(v float64) *FixedLoad {
	f := &FixedLoad{}
	f.Set(v)
	return f
}

// Set sets the reading.
func (f *FixedLoad) Set(v float64) { f.bits.Store(math.Float64bits(v)) }

// Load returns the reading.
func (f *FixedLoad) Load() (float64, error) { return math.Float64frombits(f.bits.Load()), nil }

// RequestCounts are the series of fiberguard_loadshed_requests_total of one instance.
type RequestCounts struct{ Admitted, Rejected, CriticalAdmitted, CriticalRejected int }

// WantRequests fails t unless reg holds exactly n as the request counters of the instance named "default".
func WantRequests(t testing.TB, reg prometheus.Gatherer, n RequestCounts) {
	t.Helper()
	want := fmt.Sprintf(`
# HELP fiberguard_loadshed_requests_total Requests decided, by priority and decision (rejected decisions in dry-run mode are counted but served).
# TYPE fiberguard_loadshed_requests_total counter
fiberguard_loadshed_requests_total{decision="admitted",name="default",priority="critical"} %d
fiberguard_loadshed_requests_total{decision="admitted",name="default",priority="normal"} %d
fiberguard_loadshed_requests_total{decision="rejected",name="default",priority="critical"} %d
fiberguard_loadshed_requests_total{decision="rejected",name="default",priority="normal"} %d
`, n.CriticalAdmitted, n.Admitted, n.CriticalRejected, n.Rejected)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fiberguard_loadshed_requests_total"); err != nil {
		t.Fatal(err)
	}
}

// Gauge is the value of the gauge named name, which must have one series in reg.
func Gauge(t testing.TB, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetGauge() != nil {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s with one series", name)
	return 0
}
