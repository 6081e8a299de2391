package core

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

// statusJSON marshals r's Status and decodes it as a generic object, as a status page's reader would.
func statusJSON(t *testing.T, r *Engine) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.Status())
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStatusJSON: the suite's shape. name and updated_at first (null before the first interval), the decision,
// counters without _total, last_error only while the source fails.
func TestStatusJSON(t *testing.T) {
	var fail bool
	src := func(context.Context) (Cluster, error) {
		if fail {
			return Cluster{}, errors.New("prometheus is down")
		}
		return Cluster{Average: 40, Nodes: 3}, nil
	}
	cfg := testConfig(src, 60)
	cfg.Name = "api"
	r := NewEngine(cfg, nil)
	keys := []string{"name", "updated_at", "decision", "connections", "counted", "average", "nodes", "balance",
		"budget", "shed", "source_errors"}

	got := statusJSON(t, r)
	if k := slices.Sorted(maps.Keys(got)); !slices.Equal(k, slices.Sorted(slices.Values(keys))) {
		t.Fatalf("keys %v, want %v", k, keys)
	}
	if got["name"] != "api" || got["updated_at"] != nil || got["decision"] != "starting" {
		t.Fatalf("before the first interval: %v, want name api, updated_at null, decision starting", got)
	}

	before := time.Now()
	r.Evaluate(context.Background())
	sheds(r, 3)
	got = statusJSON(t, r)
	at, err := time.Parse(time.RFC3339Nano, got["updated_at"].(string))
	if err != nil || at.Before(before.Round(0)) || at.After(time.Now()) {
		t.Fatalf("updated_at %v (%v), want the time of the interval", got["updated_at"], err)
	}
	want := map[string]any{"name": "api", "decision": "shedding", "connections": 60.0, "counted": 60.0,
		"average": 40.0, "nodes": 3.0, "balance": 0.5, "budget": 2.0, "shed": 2.0, "source_errors": 0.0}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}

	fail = true
	r.Evaluate(context.Background())
	got = statusJSON(t, r)
	if got["decision"] != "source_error" || got["source_errors"] != 1.0 || got["last_error"] != "prometheus is down" ||
		got["shed"] != 2.0 {
		t.Fatalf("after a failed reading: %v, want source_error, 1 error, its message, 2 shed", got)
	}
}

// TestStatusIsAFreshValue: changing a returned Status changes neither the engine's nor another caller's.
func TestStatusIsAFreshValue(t *testing.T) {
	r := NewEngine(testConfig(fixed(40, 3), 60), nil)
	r.Evaluate(context.Background())
	a := r.Status()
	want := *a.UpdatedAt
	*a.UpdatedAt = time.Time{}
	if b := r.Status(); b.UpdatedAt == nil || !b.UpdatedAt.Equal(want) {
		t.Fatalf("UpdatedAt %v after a caller changed its copy, want %v", b.UpdatedAt, want)
	}
}
