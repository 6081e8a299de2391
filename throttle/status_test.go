package throttle

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
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 4, DisableMetrics: true})
	defer th.Close()
	b, err := json.Marshal(th.Status())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window":2`, `"window_min":2`, `"window_max":4`, `"in_flight":0`, `"triggers":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status JSON %s lacks %s", b, want)
		}
	}
}

// TestStatusJSONLastSuccess: before a trigger's first success its last_success is null, not year 1; after it,
// the instant of that success.
func TestStatusJSONLastSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ok atomic.Bool
		th := NewThrottler(Config{DisableMetrics: true, Triggers: []Trigger{{Name: "s", Interval: 10 * time.Second,
			Func: func(context.Context) (bool, error) {
				if !ok.Load() {
					return false, errors.New("not ready")
				}
				return false, nil
			}}}})
		defer th.Close()
		triggerJSON := func() map[string]any {
			t.Helper()
			b, err := json.Marshal(th.Status())
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
