package haproxy

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer answers each line on a connection with its own name, and counts its open connections.
type echoServer struct {
	name string
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

func startEcho(t *testing.T, name string) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{name: name, ln: ln, open: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.open[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() {
					s.mu.Lock()
					delete(s.open, c)
					s.mu.Unlock()
					c.Close()
				}()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := c.Write([]byte(s.name + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

// stop closes the listener and every open connection, as a stopped node does.
func (s *echoServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ask sends a line on c and returns the name of the server that answered.
func ask(t *testing.T, c net.Conn, r *bufio.Reader) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("who\n")); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

// TestLeastconnAndFailover proves what the rebalance test relies on: leastconn places new connections on the
// server with the fewest, a client connection stays on its server, and a stopped server's clients reconnect to
// the others without a refused connection.
func TestLeastconnAndFailover(t *testing.T) {
	a, b := startEcho(t, "a"), startEcho(t, "b")
	p := Start(t, Config{Servers: []string{a.ln.Addr().String(), b.ln.Addr().String()}})

	type client struct {
		c net.Conn
		r *bufio.Reader
	}
	dial := func() client {
		c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return client{c, bufio.NewReader(c)}
	}
	counts := map[string]int{}
	var clients []client
	for range 10 {
		cl := dial()
		counts[ask(t, cl.c, cl.r)]++ // one exchange at a time, so each connection is open when the next is placed
		clients = append(clients, cl)
	}
	if counts["a"] != 5 || counts["b"] != 5 {
		t.Fatalf("leastconn placed %v, want 5 and 5", counts)
	}
	for _, cl := range clients[:3] {
		first := ask(t, cl.c, cl.r)
		if again := ask(t, cl.c, cl.r); again != first {
			t.Fatalf("a connection moved from %s to %s", first, again)
		}
	}

	a.stop() // at once: before a health check notices, a refused connection is redispatched
	for range 5 {
		cl := dial()
		if got := ask(t, cl.c, cl.r); got != "b" {
			t.Fatalf("a new connection went to %s with a stopped", got)
		}
	}
}
