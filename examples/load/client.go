package main

import (
	"net"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

// httpDoer sends GET requests to one server over keep-alive connections, one per request in flight.
type httpDoer struct {
	client  *fasthttp.HostClient
	base    string // scheme://host:port
	timeout time.Duration
}

func newHTTPDoer(target *url.URL, inflight int, timeout time.Duration) *httpDoer {
	return &httpDoer{
		client: &fasthttp.HostClient{
			Addr: target.Host,
			Name: "fiberguard-load",
			// The driver bounds requests in flight itself; a connection per request means none waits for one.
			MaxConns: inflight,
			// The path goes out as the user wrote it.
			DisablePathNormalizing: true,
			ReadBufferSize:         16 << 10,
			// A dialer of our own: fasthttp's default one keeps a DNS cache with a goroutine that never ends.
			DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
				return (&net.Dialer{Timeout: timeout}).Dial("tcp", addr)
			},
			MaxResponseBodySize: 1 << 20,
		},
		base:    target.String(),
		timeout: timeout,
	}
}

func (h *httpDoer) do(path string) result {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(h.base + path)
	if err := h.client.DoTimeout(req, resp, h.timeout); err != nil {
		return result{err: err}
	}
	r := result{status: resp.StatusCode()}
	if v := resp.Header.Peek(rejectedByHeader); len(v) > 0 {
		r.rejectedBy = string(v)
	}
	return r
}

// close closes the idle connections; call it once no request is in flight.
func (h *httpDoer) close() { h.client.CloseIdleConnections() }
