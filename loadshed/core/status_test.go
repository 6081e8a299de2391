package core

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
)

func TestStatusJSON(t *testing.T) {
	sig := coretest.NewFixedLoad(0.97)
	e, _ := newTestEngine(t, testConfig{Signal: sig, Name: "api", Interval: time.Hour}) // the test takes the readings
	e.Admit(false)
	before := time.Now()
	e.Sample()

	raw, err := json.Marshal(e.Status())
	if err != nil {
		t.Fatal(err)
	}
	// The shape every module's Status shares begins the object.
	if !strings.HasPrefix(string(raw), `{"name":"api","updated_at":"`) {
		t.Fatalf("Status JSON does not begin with name and updated_at: %s", raw)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "api", "load": 0.97, "probability": 1.0, "critical_probability": 0.0,
		"admitted": 0.0, "rejected": 1.0, "critical_admitted": 0.0, "critical_rejected": 0.0, "sampler_errors": 0.0,
		"in_flight": 0.0, "limit": 0.0, "dry_run": false, "signal": "custom", "interval_seconds": 3600.0, "idle_interval_seconds": 3600.0,
		"resting": false, "readings": []any{},
	}
	updated, _ := got["updated_at"].(string)
	delete(got, "updated_at")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Status JSON\n got %v\nwant %v (and updated_at)", got, want)
	}
	at, err := time.Parse(time.RFC3339Nano, updated)
	if err != nil || at.Before(before.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("updated_at %q (%v): not the time of the last reading, %v", updated, err, before)
	}
}

func TestStatusBeforeAnyReading(t *testing.T) {
	e, _ := newTestEngine(t, testConfig{Interval: time.Hour,
		Signal: SignalFunc(func() (float64, error) { return 0, errors.New("not yet") })})
	raw, err := json.Marshal(e.Status())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"updated_at":null`) || !strings.Contains(string(raw), `"sampler_errors":1`) {
		t.Fatalf("Status JSON before any reading: %s; want updated_at null and one sampler error", raw)
	}
}

func TestStatusReturnsFreshValues(t *testing.T) {
	e, _ := newTestEngine(t, testConfig{Signal: NewMax(&named{name: "a", load: 0.5}), Interval: time.Hour})
	first := e.Status()
	if first.UpdatedAt == nil || len(first.Readings) != 1 {
		t.Fatalf("status %+v", first)
	}
	was := *first.UpdatedAt
	*first.UpdatedAt = time.Time{}
	first.Readings[0].Load = 42
	if again := e.Status(); !again.UpdatedAt.Equal(was) || again.Readings[0].Load != 0.5 {
		t.Fatalf("editing one Status changed the next: %+v", again)
	}
}
