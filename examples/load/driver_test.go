package main

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeServer answers after a fixed latency (of the bubble's clock) and remembers how many requests it held at once.
type fakeServer struct {
	latency func(path string) time.Duration
	answer  func(path string) result

	mu           sync.Mutex
	active, most int           // most: the most active at once
	release      chan struct{} // when set, requests wait for it to close instead of the latency
}

func (f *fakeServer) do(path string) result {
	f.mu.Lock()
	f.active++
	f.most = max(f.most, f.active)
	f.mu.Unlock()
	if f.release != nil {
		<-f.release
	} else {
		time.Sleep(f.latency(path))
	}
	f.mu.Lock()
	f.active--
	f.mu.Unlock()
	if f.answer == nil {
		return result{status: 200}
	}
	return f.answer(path)
}

func (f *fakeServer) mostAtOnce() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most
}

func constant(d time.Duration) func(string) time.Duration {
	return func(string) time.Duration { return d }
}

// A server that takes 1.005 s per answer gets 200 requests in every second all the same: the sender never waits
// for answers. A closed loop with 200 workers would send one request per worker per 1.005 s.
func TestOpenLoopKeepsTheRateWhenTheServerIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{latency: constant(1005 * time.Millisecond)}
		d := newDriver([]route{{"/slow", 200}}, 1000, srv)
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.run(context.Background(), start, 3*time.Second)
		}()

		// Look just before each second, so no send falls on the instant looked at.
		for sec := 1; sec <= 3; sec++ {
			time.Sleep(time.Until(start.Add(time.Duration(sec)*time.Second - time.Millisecond)))
			c, _ := d.routes[0].takeInterval()
			if c.sent != 200 || c.dropped != 0 {
				t.Errorf("second %d: sent %d, dropped %d; want 200, 0", sec, c.sent, c.dropped)
			}
		}
		<-done
		// The last request was due at 2.995 s and took 1.005 s.
		if took := time.Since(start); took != 4*time.Second {
			t.Errorf("the run took %v, want 4s", took)
		}
		total := d.routes[0].totals()
		if total.sent != 600 || total.ok != 600 || total.dropped != 0 {
			t.Errorf("sent %d, ok %d, dropped %d; want 600, 600, 0", total.sent, total.ok, total.dropped)
		}
		// 1.005 s of requests at 200 a second: 201 or 202 wait at once.
		if srv.mostAtOnce() < 201 || srv.mostAtOnce() > 202 {
			t.Errorf("%d requests in flight at most, want 201 or 202", srv.mostAtOnce())
		}
		// Latency counts from the due instant; here it is the server's own.
		if p50, _ := total.okOnly.quantile(0.5); p50 != 1005*time.Millisecond {
			t.Errorf("p50 %v, want 1.005s", p50)
		}
	})
}

// With every slot taken, the requests due are dropped and counted at their due instants; the schedule goes on.
func TestInflightBoundDropsWithoutBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{release: make(chan struct{})}
		d := newDriver([]route{{"/a", 60}, {"/b", 40}}, 10, srv)
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.run(context.Background(), start, time.Second)
		}()

		time.Sleep(time.Until(start.Add(500*time.Millisecond + time.Millisecond)))
		a, _ := d.routes[0].takeInterval()
		b, _ := d.routes[1].takeInterval()
		// Due by 0.501 s: 31 on /a (0, 1/60, ... 30/60) and 21 on /b (0, 1/40, ... 20/40); 10 of them hold every slot.
		if a.sent+a.dropped != 31 || b.sent+b.dropped != 21 || a.sent+b.sent != 10 {
			t.Errorf("by 0.5 s: /a sent %d dropped %d, /b sent %d dropped %d; want 31 and 21 due, 10 sent",
				a.sent, a.dropped, b.sent, b.dropped)
		}
		if got := d.inflight(); got != 10 {
			t.Errorf("%d in flight, want 10", got)
		}

		time.Sleep(time.Until(start.Add(time.Second)))
		// Every request is due; none has been answered, and the sender did not wait for them.
		ta, tb := d.routes[0].totals(), d.routes[1].totals()
		if ta.sent+ta.dropped != 60 || tb.sent+tb.dropped != 40 || ta.sent+tb.sent != 10 || ta.answered()+tb.answered() != 0 {
			t.Errorf("by 1 s: /a %d+%d, /b %d+%d, answered %d; want 60 and 40 due, 10 sent, none answered",
				ta.sent, ta.dropped, tb.sent, tb.dropped, ta.answered()+tb.answered())
		}
		if n := srv.mostAtOnce(); n != 10 {
			t.Errorf("the server held %d at once, want 10", n)
		}
		close(srv.release)
		<-done
		if ta.ok+tb.ok != 10 || d.inflight() != 0 {
			t.Errorf("after the release: %d ok, %d in flight; want 10, 0", ta.ok+tb.ok, d.inflight())
		}
	})
}

// A slot is free again as soon as its answer is in: answers in 95 ms at 100 a second hold 10 slots at most.
func TestInflightBoundFreesSlotsOnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{latency: constant(95 * time.Millisecond)}
		d := newDriver([]route{{"/a", 100}}, 10, srv)
		d.run(context.Background(), time.Now(), time.Second)
		total := d.routes[0].totals()
		if total.sent != 100 || total.dropped != 0 || total.ok != 100 || srv.mostAtOnce() != 10 {
			t.Fatalf("sent %d, dropped %d, ok %d, at most %d at once; want 100, 0, 100, 10", total.sent, total.dropped,
				total.ok, srv.mostAtOnce())
		}
	})
}

// Cancelling stops the sending at once, and run still waits for the answers of what was sent.
func TestRunStopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{latency: constant(300 * time.Millisecond)}
		d := newDriver([]route{{"/a", 10}}, 100, srv)
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		time.AfterFunc(450*time.Millisecond, cancel)
		d.run(ctx, start, time.Hour)
		total := d.routes[0].totals()
		// Sent at 0, 0.1, ... 0.4 s; the last answer comes at 0.7 s.
		if total.sent != 5 || total.ok != 5 || time.Since(start) != 700*time.Millisecond {
			t.Fatalf("sent %d, ok %d, took %v; want 5, 5, 700ms", total.sent, total.ok, time.Since(start))
		}
	})
}
