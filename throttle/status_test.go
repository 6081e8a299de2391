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

func TestSnapshotJSON(t *testing.T) {
	th := NewThrottler(Config{WindowMin: 2, WindowMax: 4, DisableMetrics: true})
	defer th.Close()
	b, err := json.Marshal(th.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window":2`, `"window_min":2`, `"window_max":4`, `"in_flight":0`, `"signals":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("snapshot JSON %s lacks %s", b, want)
		}
	}
	if th.Window() != 2 {
		t.Errorf("Window() = %d", th.Window())
	}
}

// TestSnapshotJSONLastSuccess: before a signal's first success its last_success is null, not year 1; after it,
// the instant of that success.
func TestSnapshotJSONLastSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ok atomic.Bool
		th := NewThrottler(Config{DisableMetrics: true, Signals: []Signal{{Name: "s", Interval: 10 * time.Second,
			Func: func(context.Context) (bool, error) {
				if !ok.Load() {
					return false, errors.New("not ready")
				}
				return false, nil
			}}}})
		defer th.Close()
		signalJSON := func() map[string]any {
			t.Helper()
			b, err := json.Marshal(th.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			var s struct{ Signals []map[string]any }
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			return s.Signals[0]
		}

		if v, present := signalJSON()["last_success"]; !present || v != nil {
			t.Fatalf("last_success before any evaluation: %v (present %t), want null", v, present)
		}
		synctest.Wait() // the first evaluation fails
		if sig := signalJSON(); sig["evaluations"] != 1.0 || sig["last_success"] != nil {
			t.Fatalf("after a failed evaluation: %v, want last_success null", sig)
		}

		ok.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := time.Now().Format(time.RFC3339Nano) // the fake clock stands still once every goroutine waits
		if got := signalJSON()["last_success"]; got != want {
			t.Fatalf("last_success after a success at %s: %v", want, got)
		}

		ok.Store(false) // a later failure keeps the instant of the last success
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := signalJSON()["last_success"]; got != want {
			t.Fatalf("last_success after a later failure: %v, want %s", got, want)
		}
	})
}
