// Package memnet is an in-memory network for the tests of upstreampick's core and of its Fiber adapters. Its
// Dial (for Config.Dial) sleeps a host's round trip, then connects a net.Pipe to the host's fasthttp handler.
// Everything runs in a testing/synctest bubble (see Bubble), so a health dial's sample is exactly the round
// trip, and nothing depends on the machine's load. Its DNS (for Config.Resolver) answers with the records a
// test sets. It is not meant for use outside tests.
package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/valyala/fasthttp"
)

// Net is the network of one bubble.
type Net struct {
	mu    sync.Mutex
	hosts map[string]*host
	conns map[net.Conn]string // server ends of open connections, by host address
	owned []io.Closer
	// atEnd runs first at shutdown: releases of what tests hold.
	atEnd   []func()
	serving sync.WaitGroup
}

// host is one address of a Net.
type host struct {
	rtt     time.Duration
	handler fasthttp.RequestHandler
	state   State
	dials   int
}

// State is how a host answers.
type State int

const (
	// Up answers with the host's handler.
	Up State = iota
	// Down refuses connections.
	Down
	// HangUp accepts, reads the request and closes without an answer.
	HangUp
)

// Bubble runs f in a synctest bubble with a fresh Net. When f ends it runs what AtShutdown registered, closes
// what Own registered, then every connection, and waits for everything the test started to end.
func Bubble(t *testing.T, f func(t *testing.T, n *Net)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		n := &Net{hosts: map[string]*host{}, conns: map[net.Conn]string{}}
		defer n.shutdown()
		f(t, n)
	})
}

// Eventually waits until cond holds, checking it only when every other goroutine of the bubble is durably
// blocked, so that no change is seen half made (a flag set, the pick set not yet rebuilt). It fails after 10 s
// of the bubble's time.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		synctest.Wait()
		if cond() {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Own registers c (a Picker) to be closed when the bubble ends.
func (n *Net) Own(c io.Closer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.owned = append(n.owned, c)
}

// Serve makes addr answer with h (nil: its own address as the body) after a round trip of rtt per dial.
func (n *Net) Serve(addr string, rtt time.Duration, h fasthttp.RequestHandler) {
	if h == nil {
		h = func(c *fasthttp.RequestCtx) { c.SetBodyString(addr) }
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hosts[addr] = &host{rtt: rtt, handler: h}
}

// Set changes addr's state; Down also closes its open connections, as a server shut down would.
func (n *Net) Set(addr string, s State) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hosts[addr].state = s
	if s == Down {
		for c, a := range n.conns {
			if a == addr {
				_ = c.Close()
			}
		}
	}
}

// Dials returns how many dials addr received, refused ones included.
func (n *Net) Dials(addr string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[addr].dials
}

// Dial is a Config.Dial. An unknown address refuses at once; a known one answers after its round trip.
func (n *Net) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n.mu.Lock()
	h := n.hosts[addr]
	rtt := time.Duration(0)
	if h != nil {
		h.dials++
		rtt = h.rtt
	}
	n.mu.Unlock()
	if h == nil {
		return Refuse(ctx, addr)
	}
	t := time.NewTimer(rtt)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	case <-t.C:
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	if h.state == Down {
		return Refuse(ctx, addr)
	}
	client, server := net.Pipe()
	n.conns[server] = addr
	n.serving.Add(1)
	go func() {
		defer n.serving.Done()
		if h.state == HangUp {
			buf := make([]byte, 4096)
			_, _ = server.Read(buf)
		} else {
			// No Date header: fasthttp would start its process-wide refresher, a goroutine the bubble cannot end.
			srv := &fasthttp.Server{Handler: h.handler, NoDefaultDate: true}
			_ = srv.ServeConn(serverConn{server})
		}
		_ = server.Close()
		n.mu.Lock()
		delete(n.conns, server)
		n.mu.Unlock()
	}()
	return client, nil
}

// serverConn is a server's end of a connection. Closed (by Set or at shutdown), it reads as the end of the
// input, as a peer's close does: fasthttp answers any other read error with an error response whose Date
// header ignores NoDefaultDate, and would start its refresher inside the bubble.
type serverConn struct{ net.Conn }

func (c serverConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if errors.Is(err, io.ErrClosedPipe) {
		err = io.EOF
	}
	return n, err
}

// Refuse is a Config.Dial that refuses every connection, for tests that dial nothing on purpose; it needs no
// bubble.
func Refuse(context.Context, string) (net.Conn, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

// AtShutdown registers f to run first when the bubble ends (t.Cleanup runs too late for what the bubble
// waits for).
func (n *Net) AtShutdown(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.atEnd = append(n.atEnd, f)
}

// Hold returns a handler that answers body, and blocks on /hold until release is called (when the bubble ends
// at the latest), signalling started when such a request arrives.
func (n *Net) Hold(body string) (h fasthttp.RequestHandler, started <-chan struct{}, release func()) {
	rel := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	n.AtShutdown(release)
	st := make(chan struct{}, 16)
	h = func(c *fasthttp.RequestCtx) {
		if string(c.Path()) == "/hold" {
			st <- struct{}{}
			<-rel
		}
		c.SetBodyString(body)
	}
	return h, st, release
}

// shutdown releases what tests hold, closes what they own and every connection, then lets idle-connection
// cleaners run out.
func (n *Net) shutdown() {
	n.mu.Lock()
	owned, atEnd := n.owned, n.atEnd
	n.mu.Unlock()
	for _, f := range atEnd {
		f()
	}
	for _, c := range owned {
		_ = c.Close()
	}
	n.mu.Lock()
	for c := range n.conns {
		_ = c.Close()
	}
	n.mu.Unlock()
	n.serving.Wait()
	// fasthttp's per-client cleaner ends only after sleeping its idle period; in the bubble that is free.
	time.Sleep(time.Hour)
}

// Call sends GET path to h (an app's handler) on a RequestCtx of its own, as a server would, and returns a
// copy of the response.
func Call(h fasthttp.RequestHandler, path string) *fasthttp.Response {
	var c fasthttp.RequestCtx
	c.Request.Header.SetMethod(fasthttp.MethodGet)
	c.Request.SetRequestURI(path)
	c.Request.Header.SetHost("gateway")
	h(&c)
	resp := &fasthttp.Response{}
	c.Response.CopyTo(resp)
	return resp
}

// Get is Call returning the status and body.
func Get(h fasthttp.RequestHandler, path string) (int, string) {
	resp := Call(h, path)
	return resp.StatusCode(), string(resp.Body())
}

// Recv waits for ch for at most 10 s.
func Recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}
