// Package coretest holds what the tests of the core and of its Fiber adapters share: waiting for state set by
// goroutines on the real clock, reading the metrics a throttle exports, and collecting log output. It is for tests
// only.
package coretest

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// WaitFor polls cond for up to 10 s: for state set by goroutines running on the real clock.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Gather flattens a registry into "name{labels}" -> value (histograms as _count).
func Gather(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			var v float64
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				name += "_count"
				v = float64(m.GetHistogram().GetSampleCount())
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}
