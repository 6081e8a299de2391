package loadshed

import (
	"context"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
	"go.uber.org/goleak"
)

func TestFirstReadingBeforeFirstRequest(t *testing.T) {
	// No sampler tick can have happened yet: the first reading is taken in NewShedder.
	s, _ := newTestShedder(t, Config{Signal: coretest.NewFixedLoad(1), Interval: time.Hour})
	if st := s.Status(); st.Load != 1 || st.Probability != 1 || st.UpdatedAt == nil {
		t.Fatalf("status right after NewShedder: %+v", st)
	}
	if r := get(t, newApp(s), "/"); r.code != 503 {
		t.Fatalf("first request got %d, want 503", r.code)
	}
}

func TestContextDoneLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	h, ctxReq := benchApp(New(Config{Context: ctx, Signal: coretest.NewFixedLoad(1), Interval: time.Millisecond, DisableMetrics: true}))
	cancel()
	// The sampler is gone (VerifyNone above); requests are still answered with the last load.
	h(ctxReq)
	if got := ctxReq.Response.StatusCode(); got != 503 {
		t.Fatalf("request after the context ended: %d, want 503", got)
	}
}
