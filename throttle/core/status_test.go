package core

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestStatusJSON(t *testing.T) {
	e := newEngine(Config[any, any]{Name: "api", WindowMin: 2, WindowMax: 4, DisableMetrics: true})
	defer e.Close()
	b, err := json.Marshal(e.Status())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"name":"api","updated_at":null,`, `"window":2`, `"window_min":2`, `"window_max":4`,
		`"in_flight":0`, `"growth_held":false`, `"admitted":0`, `"rejected":0`, `"triggers":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status JSON %s lacks %s", b, want)
		}
	}
}

// TestStatusJSONTriggerShape: every field of a trigger's status, snake_case, before its first evaluation.
func TestStatusJSONTriggerShape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{Name: "queue", Func: func(context.Context) (bool, error) {
			<-release
			return false, nil
		}}}})
		defer e.Close()
		defer close(release)
		b, err := json.Marshal(e.Status().Triggers[0])
		if err != nil {
			t.Fatal(err)
		}
		want := `{"name":"queue","kind":"func","firing":false,"verdict":"","held":false,"stale":false,"invalid":false,` +
			`"evaluations":0,"errors":0,"backoffs":0,"last_success":null}`
		if string(b) != want {
			t.Fatalf("trigger status JSON\n got %s\nwant %s", b, want)
		}
	})
}

// TestStatusJSONUpdatedAt: updated_at is null until an evaluation of some trigger is applied, then the instant
// of the last one, whichever trigger made it and whether it failed or not.
func TestStatusJSONUpdatedAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{
			{Name: "gated", Interval: 10 * time.Second, Timeout: time.Minute, Func: func(ctx context.Context) (bool, error) {
				select {
				case <-gate:
					return false, nil
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}},
			{Name: "failing", Interval: 15 * time.Second, Func: func(ctx context.Context) (bool, error) {
				<-ctx.Done() // until its 5 s timeout
				return false, ctx.Err()
			}},
		}})
		defer e.Close()
		updatedAt := func() any {
			t.Helper()
			b, err := json.Marshal(e.Status())
			if err != nil {
				t.Fatal(err)
			}
			var s map[string]any
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			v, present := s["updated_at"]
			if !present {
				t.Fatalf("status JSON %s has no updated_at", b)
			}
			return v
		}

		synctest.Wait() // both evaluations are in progress
		if v := updatedAt(); v != nil {
			t.Fatalf("updated_at before any evaluation: %v, want null", v)
		}
		time.Sleep(5 * time.Second) // the failing trigger times out at 5 s
		synctest.Wait()
		if v, want := updatedAt(), time.Now().Format(time.RFC3339Nano); v != want {
			t.Fatalf("updated_at after a failed evaluation at %s: %v", want, v)
		}
		time.Sleep(time.Second)
		close(gate) // the gated trigger answers at 6 s
		synctest.Wait()
		if v, want := updatedAt(), time.Now().Format(time.RFC3339Nano); v != want {
			t.Fatalf("updated_at after the other trigger's evaluation at %s: %v", want, v)
		}
		if s := e.Status(); s.Triggers[0].Evaluations != 1 || s.Triggers[1].Evaluations != 1 {
			t.Fatalf("evaluations %d and %d, want one each", s.Triggers[0].Evaluations, s.Triggers[1].Evaluations)
		}
	})
}

// TestStatusIsACopy: a Status shares no memory with the Engine or with another Status.
func TestStatusIsACopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{Name: "q", Interval: time.Second,
			Func: func(context.Context) (bool, error) { return false, nil }}}})
		defer e.Close()
		synctest.Wait()
		a := e.Status()
		at, success := *a.UpdatedAt, *a.Triggers[0].LastSuccess
		*a.UpdatedAt, *a.Triggers[0].LastSuccess = time.Time{}, time.Time{}
		a.Triggers[0].Name = "changed"
		b := e.Status()
		if !b.UpdatedAt.Equal(at) || !b.Triggers[0].LastSuccess.Equal(success) || b.Triggers[0].Name != "q" {
			t.Fatalf("changing one Status changed the next: %+v", b)
		}
	})
}

// TestStatusJSONLastSuccess: before a trigger's first success its last_success is null, not year 1; after it,
// the instant of that success.
func TestStatusJSONLastSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ok atomic.Bool
		e := newEngine(Config[any, any]{DisableMetrics: true, Triggers: []Trigger{{Name: "s", Interval: 10 * time.Second,
			Func: func(context.Context) (bool, error) {
				if !ok.Load() {
					return false, errors.New("not ready")
				}
				return false, nil
			}}}})
		defer e.Close()
		triggerJSON := func() map[string]any {
			t.Helper()
			b, err := json.Marshal(e.Status())
			if err != nil {
				t.Fatal(err)
			}
			var s struct{ Triggers []map[string]any }
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			return s.Triggers[0]
		}

		if v, present := triggerJSON()["last_success"]; !present || v != nil {
			t.Fatalf("last_success before any evaluation: %v (present %t), want null", v, present)
		}
		synctest.Wait() // the first evaluation fails
		if sig := triggerJSON(); sig["evaluations"] != 1.0 || sig["last_success"] != nil {
			t.Fatalf("after a failed evaluation: %v, want last_success null", sig)
		}

		ok.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := time.Now().Format(time.RFC3339Nano) // the fake clock stands still once every goroutine waits
		if got := triggerJSON()["last_success"]; got != want {
			t.Fatalf("last_success after a success at %s: %v", want, got)
		}

		ok.Store(false) // a later failure keeps the instant of the last success
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := triggerJSON()["last_success"]; got != want {
			t.Fatalf("last_success after a later failure: %v, want %s", got, want)
		}
	})
}
