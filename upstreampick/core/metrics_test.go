package core

import (
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		reg := prometheus.NewRegistry()
		cfg := testConfig(addrA)
		cfg.Registerer = reg
		p := picker(n, cfg)
		eventually(t, "measured", func() bool { return allSampled(p) })
		if err := do(p); err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		type series struct{ name, label, value string }
		got := map[series]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if len(labels) != 2 || labels["name"] != "default" {
					t.Fatalf("%s labels %v, want name=default and one more", mf.GetName(), labels)
				}
				s := series{name: mf.GetName(), label: "upstream", value: labels["upstream"]}
				if d, ok := labels["decision"]; ok {
					s.label, s.value = "decision", d
				}
				got[s] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		want := map[series]float64{
			{"fiberguard_upstreampick_rtt_seconds", "upstream", addrA}:         0.001,
			{"fiberguard_upstreampick_tier", "upstream", addrA}:                0,
			{"fiberguard_upstreampick_healthy", "upstream", addrA}:             1,
			{"fiberguard_upstreampick_draining", "upstream", addrA}:            0,
			{"fiberguard_upstreampick_picks_total", "upstream", addrA}:         1,
			{"fiberguard_upstreampick_requests_total", "decision", "admitted"}: 1,
			{"fiberguard_upstreampick_requests_total", "decision", "rejected"}: 0,
		}
		if len(got) != len(want) {
			t.Fatalf("series %v, want %v", got, want)
		}
		for s, v := range want {
			if g, ok := got[s]; !ok || g != v {
				t.Fatalf("%v = %v (present %v), want %v", s, g, ok, v)
			}
		}

		// A second Picker on the same registry neither panics nor breaks the first.
		_ = newEngine(cfg).Close()
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 1 {
			t.Fatalf("tier series %d after a duplicate Picker, want 1", n)
		}
		// Close unregisters, so a new Picker can take over.
		_ = p.Close()
		if n := testutil.CollectAndCount(reg); n != 0 {
			t.Fatalf("%d series after Close, want 0", n)
		}
		p3 := picker(n, cfg)
		if n := testutil.CollectAndCount(reg, "fiberguard_upstreampick_tier"); n != 1 {
			t.Fatalf("tier series %d for a new Picker, want 1", n)
		}
		_ = p3.Close()

		cfg.DisableMetrics = true
		p4 := picker(n, cfg)
		if p4.metrics != nil || testutil.CollectAndCount(reg) != 0 {
			t.Fatal("DisableMetrics registered metrics")
		}
	})
}

func TestRegistererNilRegistersOnTheDefault(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		n.Serve(addrA, time.Millisecond, nil)
		cfg := testConfig(addrA)
		cfg.Registerer, cfg.Name = nil, "registerer-nil"
		count := func() int {
			t.Helper()
			mfs, err := prometheus.DefaultGatherer.Gather()
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "name" && l.GetValue() == "registerer-nil" {
							k++
						}
					}
				}
			}
			return k
		}
		p := picker(n, cfg)
		if k := count(); k != 6 { // tier, healthy, draining, picks and two request counters; no rtt yet
			t.Fatalf("%d series on prometheus.DefaultRegisterer, want 6", k)
		}
		_ = p.Close()
		if k := count(); k != 0 {
			t.Fatalf("%d series on prometheus.DefaultRegisterer after Close, want 0", k)
		}
	})
}
