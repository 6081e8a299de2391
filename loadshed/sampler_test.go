package loadshed

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestFirstReadingBeforeFirstRequest(t *testing.T) {
	// No sampler tick can have happened yet: the first reading is taken in NewShedder.
	s, _ := newTestShedder(t, Config{Signal: newFixedLoad(1), Interval: time.Hour})
	if st := s.Status(); st.Load != 1 || st.Probability != 1 || st.UpdatedAt == nil {
		t.Fatalf("status right after NewShedder: %+v", st)
	}
	if r := get(t, newApp(s), "/"); r.code != 503 {
		t.Fatalf("first request got %d, want 503", r.code)
	}
}

func TestSamplerSmoothsAndSurvivesErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		readings := []struct {
			v   float64
			err error
		}{
			{0.5, nil},              // first reading, taken as is
			{1.0, nil},              // 0.5 + 0.5*(1.0-0.5) = 0.75
			{0, errors.New("boom")}, // kept: 0.75
			{math.NaN(), nil},       // a bad reading is an error too: 0.75
			{0.25, nil},             // 0.75 + 0.5*(0.25-0.75) = 0.5
		}
		i := 0
		sig := SignalFunc(func() (float64, error) {
			r := readings[min(i, len(readings)-1)]
			i++
			return r.v, r.err
		})
		s := NewShedder(Config{Signal: sig, Smoothing: 0.5, Interval: time.Second, DisableMetrics: true})
		want := []float64{0.5, 0.75, 0.75, 0.75, 0.5}
		for step, w := range want {
			if step > 0 {
				time.Sleep(time.Second)
				synctest.Wait()
			}
			if got := s.Status().Load; math.Abs(got-w) > 1e-12 {
				t.Fatalf("after reading %d: load %v, want %v", step, got, w)
			}
		}
		if e := s.Status().SamplerErrors; e != 2 {
			t.Fatalf("sampler errors %d, want 2", e)
		}
		_ = s.Close()
		_ = s.Close() // idempotent
	})
}

func TestContextStopsTheSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		_ = New(Config{Context: ctx, Interval: time.Second, DisableMetrics: true,
			Signal: SignalFunc(func() (float64, error) { reads.Add(1); return 0, nil })})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := reads.Load(); n != 4 { // the first reading in New, then one per second
			t.Fatalf("%d readings after 3 s, want 4", n)
		}
		cancel()
		synctest.Wait() // the sampler must exit: synctest fails if a goroutine is left blocked in the bubble
		time.Sleep(5 * time.Second)
		if n := reads.Load(); n != 4 {
			t.Fatalf("sampler kept reading after its context ended: %d", n)
		}
	})
}

func TestContextDoneLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	h, ctxReq := benchApp(New(Config{Context: ctx, Signal: newFixedLoad(1), Interval: time.Millisecond, DisableMetrics: true}))
	cancel()
	// The sampler is gone (VerifyNone above); requests are still answered with the last load.
	h(ctxReq)
	if got := ctxReq.Response.StatusCode(); got != 503 {
		t.Fatalf("request after the context ended: %d, want 503", got)
	}
}
