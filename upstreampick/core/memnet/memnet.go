package upstreampick

import (
	"context"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/valyala/fasthttp"
)

// memNet is an in-memory network for tests in a synctest bubble: its Dial (for Config.Dial) sleeps a host's
// round trip, then connects a net.Pipe to the host's fasthttp handler. Time is the bubble's, so a health
// dial's sample is exactly the round trip, and nothing depends on the machine's load.
type memNet struct {
	mu      sync.Mutex
	hosts   map[string]*memHost
	conns   map[net.Conn]string // server ends of open connections, by host address
	pickers []*Picker
	// atEnd runs first at shutdown: releases of what tests hold.
	atEnd   []func()
	serving sync.WaitGroup
}

// memHost is one address of a memNet.
type memHost struct {
	rtt     time.Duration
	handler fasthttp.RequestHandler
	state   hostState
	dials   int
}

type hostState int

const (
	hostUp     hostState = iota // answers with its handler
	hostDown                    // refuses connections
	hostHangUp                  // accepts, reads the request and closes without an answer
)

// bubble runs f in a synctest bubble with a fresh memNet. When f ends it closes the pickers made with
// n.picker, then every connection, and waits for everything the test started to end.
func bubble(t *testing.T, f func(t *testing.T, n *memNet)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		n := &memNet{hosts: map[string]*memHost{}, conns: map[net.Conn]string{}}
		defer n.shutdown()
		f(t, n)
	})
}

// eventually waits until cond holds, checking it only when every other goroutine of the bubble is durably
// blocked, so that no change is seen half made (a flag set, the pick set not yet rebuilt). It fails after 10 s
// of the bubble's time.
func eventually(t *testing.T, what string, cond func() bool) {
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

// picker creates a Picker over n, closed when the bubble ends.
func (n *memNet) picker(cfg Config) *Picker {
	cfg.Dial = n.Dial
	p := NewPicker(cfg)
	n.mu.Lock()
	n.pickers = append(n.pickers, p)
	n.mu.Unlock()
	return p
}

// serve makes addr answer with h (nil: its own address as the body) after a round trip of rtt per dial.
func (n *memNet) serve(addr string, rtt time.Duration, h fasthttp.RequestHandler) {
	if h == nil {
		h = func(c *fasthttp.RequestCtx) { c.SetBodyString(addr) }
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hosts[addr] = &memHost{rtt: rtt, handler: h}
}

// set changes addr's state; hostDown also closes its open connections, as a server shut down would.
func (n *memNet) set(addr string, s hostState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hosts[addr].state = s
	if s == hostDown {
		for c, a := range n.conns {
			if a == addr {
				_ = c.Close()
			}
		}
	}
}

// dials returns how many dials addr received, refused ones included.
func (n *memNet) dials(addr string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[addr].dials
}

// Dial is a Config.Dial. An unknown address refuses at once; a known one answers after its round trip.
func (n *memNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n.mu.Lock()
	h := n.hosts[addr]
	rtt := time.Duration(0)
	if h != nil {
		h.dials++
		rtt = h.rtt
	}
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	if h == nil {
		return nil, refused
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
	if h.state == hostDown {
		return nil, refused
	}
	client, server := net.Pipe()
	n.conns[server] = addr
	n.serving.Add(1)
	go func() {
		defer n.serving.Done()
		if h.state == hostHangUp {
			buf := make([]byte, 4096)
			_, _ = server.Read(buf)
		} else {
			srv := &fasthttp.Server{Handler: h.handler}
			_ = srv.ServeConn(server)
		}
		_ = server.Close()
		n.mu.Lock()
		delete(n.conns, server)
		n.mu.Unlock()
	}()
	return client, nil
}

// atShutdown registers f to run first when the bubble ends (t.Cleanup runs too late for what the bubble
// waits for).
func (n *memNet) atShutdown(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.atEnd = append(n.atEnd, f)
}

// shutdown closes the pickers and every connection, then lets idle-connection cleaners run out.
func (n *memNet) shutdown() {
	n.mu.Lock()
	pickers, atEnd := n.pickers, n.atEnd
	n.mu.Unlock()
	for _, f := range atEnd {
		f()
	}
	for _, p := range pickers {
		_ = p.Close()
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
