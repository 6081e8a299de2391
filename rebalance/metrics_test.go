package rebalance

import (
	"context"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns the value of every fiberguard_rebalance_* sample in reg.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[f.GetName()] = value(f.GetType(), m)
		}
	}
	return out
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	if typ == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Registerer = reg
	r := newRebalancer(cfg)

	got := gather(t, reg)
	if got["fiberguard_rebalance_open_connections"] != 60 || !math.IsNaN(got["fiberguard_rebalance_cluster_average"]) ||
		!math.IsNaN(got["fiberguard_rebalance_balance"]) {
		t.Fatalf("before the first interval: %v, want 60 open and no average or balance", got)
	}

	r.tick(context.Background())
	countCloses(t, newApp(r.Handler()), 3)
	want := map[string]float64{
		"fiberguard_rebalance_open_connections":    60,
		"fiberguard_rebalance_cluster_average":     40,
		"fiberguard_rebalance_cluster_nodes":       3,
		"fiberguard_rebalance_balance":             0.5,
		"fiberguard_rebalance_shed_total":          2,
		"fiberguard_rebalance_source_errors_total": 0,
	}
	got = gather(t, reg)
	if len(got) != len(want) {
		t.Fatalf("metrics %v, want %v", got, want)
	}
	for name, v := range want {
		if got[name] != v {
			t.Fatalf("%s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
}

func TestSecondInstanceOnTheSameRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Registerer = reg
	first := NewRebalancer(cfg)

	cfg.Connections = func() int { return 7 }
	second := NewRebalancer(cfg) // must not panic; its metrics are skipped
	if second.metrics != nil {
		t.Fatal("the second instance registered its metrics over the first's")
	}
	if got := gather(t, reg)["fiberguard_rebalance_open_connections"]; got != 60 {
		t.Fatalf("open connections = %v, want the first instance's 60", got)
	}
	second.Close()

	first.Close() // unregisters, so a later instance exports its own
	third := NewRebalancer(cfg)
	defer third.Close()
	if got := gather(t, reg)["fiberguard_rebalance_open_connections"]; got != 7 {
		t.Fatalf("open connections = %v after the first closed, want the third instance's 7", got)
	}
}

func TestDisableMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Registerer = reg
	cfg.DisableMetrics = true
	r := newRebalancer(cfg)
	r.tick(context.Background())
	if got := gather(t, reg); len(got) != 0 {
		t.Fatalf("metrics registered with DisableMetrics: %v", got)
	}
}
