package fasthttpclient

import (
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/valyala/fasthttp"
)

// proxyOnce sends GET / with a Connection header through p.Proxy, as a server's handler would.
func proxyOnce(p engine) (Outcome, *fasthttp.RequestCtx) {
	var c fasthttp.RequestCtx
	c.Request.SetRequestURI("http://gateway/")
	c.Request.Header.Set(fasthttp.HeaderConnection, "keep-alive")
	return p.Proxy(&c.Request, &c.Response), &c
}

func TestProxyOutcomes(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		const slow, hangUp, ok = "10.0.0.5:80", "10.0.0.6:80", "10.0.0.7:80"
		n.Serve(slow, time.Millisecond, func(c *fasthttp.RequestCtx) {
			time.Sleep(300 * time.Millisecond)
			c.SetBodyString("slow")
		})
		n.Serve(hangUp, time.Millisecond, nil)
		n.Set(hangUp, memnet.HangUp) // closes every connection without answering
		var sawConnection []byte
		n.Serve(ok, time.Millisecond, func(c *fasthttp.RequestCtx) {
			sawConnection = append([]byte(nil), c.Request.Header.Peek(fasthttp.HeaderConnection)...)
			c.Response.Header.Set(fasthttp.HeaderConnection, "keep-alive")
			c.SetBodyString("ok")
		})

		cfg := testConfig(slow)
		cfg.Timeout = 50 * time.Millisecond
		if got, _ := proxyOnce(picker(n, cfg)); got != TimedOut {
			t.Fatalf("slow upstream: %v, want TimedOut", got)
		}
		if got, _ := proxyOnce(picker(n, testConfig(hangUp))); got != Failed {
			t.Fatalf("hanging-up upstream: %v, want Failed", got)
		}
		got, c := proxyOnce(picker(n, testConfig(ok)))
		if got != Proxied || string(c.Response.Body()) != "ok" {
			t.Fatalf("upstream: %v body %q, want Proxied and its body", got, c.Response.Body())
		}
		// Connection is hop-by-hop: dropped on the way there and back.
		if sawConnection != nil || c.Response.Header.Peek(fasthttp.HeaderConnection) != nil {
			t.Fatalf("Connection header passed through: upstream saw %q, response has %q", sawConnection,
				c.Response.Header.Peek(fasthttp.HeaderConnection))
		}

		p := rejectingEngine(t, n, testConfig("10.0.0.9:80"))
		got, c = proxyOnce(p)
		if got != Rejected {
			t.Fatalf("no upstream: %v, want Rejected", got)
		}
		p.SetRejectHeaders(&c.Request, &c.Response.Header)
		if st := p.Status(); st.Rejected != 1 {
			t.Fatalf("rejected %d, want 1: Proxy counts, Reject does not count it again", st.Rejected)
		}
	})
}
