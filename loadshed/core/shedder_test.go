package core

import (
	"errors"
	"testing"

	"github.com/fiberguard/fiberguard/loadshed/core/coretest"
)

// fakeCtx is a request context of a framework-free test: it records the headers set and whether the next
// handler ran.
type fakeCtx struct {
	path    string
	headers map[string]string
	nexted  bool
	inNext  int64 // the shedder's in-flight count seen by the next handler
	shedder *Shedder[*fakeCtx, fakeHandler]
}

type fakeHandler func(*fakeCtx) error

func (c *fakeCtx) Next() error {
	c.nexted = true
	if c.shedder != nil {
		c.inNext = c.shedder.engine.InFlight()
	}
	return nil
}

func (c *fakeCtx) Set(key, val string) {
	if c.headers == nil {
		c.headers = map[string]string{}
	}
	c.headers[key] = val
}

var errRejected = errors.New("rejected")

func fakeDefaults() Config[*fakeCtx, fakeHandler] {
	return Defaults[*fakeCtx](fakeHandler(func(*fakeCtx) error { return errRejected }))
}

func TestShedderAdmitsSkipsAndRejects(t *testing.T) {
	load := coretest.NewFixedLoad(0)
	s := NewShedder(fakeDefaults(), nil, Config[*fakeCtx, fakeHandler]{
		Signal: load, Smoothing: 1, DisableMetrics: true, Name: "api", RetryAfter: -1,
		Next: func(c *fakeCtx) bool { return c.path == "/healthz" },
	})
	defer s.Close()
	h := s.Handler()

	c := &fakeCtx{path: "/", shedder: s}
	if err := h(c); err != nil || !c.nexted || c.inNext != 1 || len(c.headers) != 0 {
		t.Fatalf("admitted: err %v, next %v, in flight during next %d, headers %v", err, c.nexted, c.inNext, c.headers)
	}
	if n := s.engine.InFlight(); n != 0 {
		t.Fatalf("%d in flight after the handler returned, want 0", n)
	}

	load.Set(1)
	s.engine.Sample()
	c = &fakeCtx{path: "/"}
	if err := h(c); !errors.Is(err, errRejected) || c.nexted {
		t.Fatalf("rejected: err %v, next %v; want the default OnReject's error and no next", err, c.nexted)
	}
	if _, ok := c.headers[HeaderRetryAfter]; ok || c.headers[HeaderRejectedBy] != "loadshed/api" {
		t.Fatalf("headers of a rejection with RetryAfter < 0: %v, want only Fiberguard-Rejected-By", c.headers)
	}
	c = &fakeCtx{path: "/healthz"}
	if err := h(c); err != nil || !c.nexted {
		t.Fatalf("Next: err %v, next %v; want skipped to the next handler", err, c.nexted)
	}
	if st := s.Status(); st.Admitted != 1 || st.Rejected != 1 {
		t.Fatalf("status %+v, want 1 admitted and 1 rejected (the skipped request is not counted)", st)
	}
}

func TestShedderDefaultsAndValidation(t *testing.T) {
	// No config: the defaults, with their OnReject.
	s := NewShedder(func() Config[*fakeCtx, fakeHandler] {
		d := fakeDefaults()
		d.Signal, d.DisableMetrics = coretest.NewFixedLoad(1), true
		return d
	}(), nil)
	defer s.Close()
	c := &fakeCtx{}
	if err := s.Handler()(c); !errors.Is(err, errRejected) || c.headers[HeaderRetryAfter] != "1" ||
		c.headers[HeaderRejectedBy] != "loadshed/default" {
		t.Fatalf("defaults: err %v, headers %v", err, c.headers)
	}
	// Defaults without an OnReject: a config that sets none cannot be served.
	defer func() {
		if msg, _ := recover().(string); msg != "loadshed: Config.OnReject must not be nil" {
			t.Fatalf("panic %q, want one naming Config.OnReject", msg)
		}
	}()
	NewShedder(Defaults[*fakeCtx, fakeHandler](nil), nil, Config[*fakeCtx, fakeHandler]{DisableMetrics: true})
}
