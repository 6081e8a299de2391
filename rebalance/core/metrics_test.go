package core

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns the value of every fiberguard_rebalance_* sample in g whose name label is name, failing when a
// sample lacks the label or carries another label.
func gather(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "fiberguard_rebalance_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			if len(labels) != 1 || labels[0].GetName() != "name" {
				t.Fatalf("%s has labels %v, want only name", f.GetName(), labels)
			}
			if labels[0].GetValue() == name {
				out[f.GetName()] = value(f.GetType(), m)
			}
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
	r := NewEngine(cfg, nil)

	got := gather(t, reg, "default")
	if got["fiberguard_rebalance_open_connections"] != 60 || !math.IsNaN(got["fiberguard_rebalance_cluster_average"]) ||
		!math.IsNaN(got["fiberguard_rebalance_balance"]) {
		t.Fatalf("before the first interval: %v, want 60 open and no average or balance", got)
	}

	r.Evaluate(context.Background())
	sheds(r, 3)
	want := map[string]float64{
		"fiberguard_rebalance_open_connections":    60,
		"fiberguard_rebalance_cluster_average":     40,
		"fiberguard_rebalance_cluster_nodes":       3,
		"fiberguard_rebalance_balance":             0.5,
		"fiberguard_rebalance_shed_total":          2,
		"fiberguard_rebalance_source_errors_total": 0,
	}
	got = gather(t, reg, "default")
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
	first := NewEngine(cfg, nil)

	cfg.Connections = func() int { return 7 }
	second := NewEngine(cfg, nil) // the same Name: must not panic; its metrics are skipped
	if second.metrics != nil {
		t.Fatal("the second instance registered its metrics over the first's")
	}
	if got := gather(t, reg, "default")["fiberguard_rebalance_open_connections"]; got != 60 {
		t.Fatalf("open connections = %v, want the first instance's 60", got)
	}
	second.Close()

	first.Close() // unregisters, so a later instance exports its own
	third := NewEngine(cfg, nil)
	defer third.Close()
	if got := gather(t, reg, "default")["fiberguard_rebalance_open_connections"]; got != 7 {
		t.Fatalf("open connections = %v after the first closed, want the third instance's 7", got)
	}
}

// TestNamesOnOneRegistry: instances of distinct names both register, each labelled with its Name, and each
// unregisters only its own.
func TestNamesOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Registerer = reg
	cfg.Name = "api"
	api := NewEngine(cfg, nil)
	defer api.Close()
	cfg.Name = "admin"
	cfg.Connections = func() int { return 7 }
	admin := NewEngine(cfg, nil)
	if api.metrics == nil || admin.metrics == nil {
		t.Fatalf("registered: api %v, admin %v; want both", api.metrics != nil, admin.metrics != nil)
	}
	if a, b := gather(t, reg, "api"), gather(t, reg, "admin"); len(a) != 6 || len(b) != 6 ||
		a["fiberguard_rebalance_open_connections"] != 60 || b["fiberguard_rebalance_open_connections"] != 7 {
		t.Fatalf("name=api %v, name=admin %v; want six series each, 60 and 7 open", a, b)
	}
	if got := gather(t, reg, "default"); len(got) != 0 {
		t.Fatalf("series labelled default: %v", got)
	}
	admin.Close()
	if a, b := gather(t, reg, "api"), gather(t, reg, "admin"); len(a) != 6 || len(b) != 0 {
		t.Fatalf("after admin closed: name=api %v, name=admin %v; want api's only", a, b)
	}
}

// TestNilRegistererUsesTheDefaultRegisterer: with Registerer nil the metrics go to prometheus.DefaultRegisterer,
// and Close takes them off it.
func TestNilRegistererUsesTheDefaultRegisterer(t *testing.T) {
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Registerer = nil
	cfg.Name = "default-registerer-test"
	r := NewEngine(cfg, nil)
	if got := gather(t, prometheus.DefaultGatherer, cfg.Name); got["fiberguard_rebalance_open_connections"] != 60 {
		r.Close()
		t.Fatalf("default registry holds %v for %q, want its series with 60 open", got, cfg.Name)
	}
	r.Close()
	if got := gather(t, prometheus.DefaultGatherer, cfg.Name); len(got) != 0 {
		t.Fatalf("default registry still holds %v after Close", got)
	}
}

func TestDisableMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(fixed(40, 3), 60)
	cfg.Registerer = reg
	cfg.DisableMetrics = true
	r := NewEngine(cfg, nil)
	r.Evaluate(context.Background())
	if got := gather(t, reg, "default"); len(got) != 0 {
		t.Fatalf("metrics registered with DisableMetrics: %v", got)
	}
}
