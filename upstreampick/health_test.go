package upstreampick

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestHealthCheckAndRequestRecoverThroughOnePath makes an upstream unhealthy, then lets a health check or a
// successful request find it reachable: either way it is healthy and pickable again, and its failure count
// starts over.
func TestHealthCheckAndRequestRecoverThroughOnePath(t *testing.T) {
	for _, via := range []string{"health check", "request"} {
		t.Run(via, func(t *testing.T) {
			a := startSite(t, "a", nil)
			cfg := testConfig(a.addr)
			cfg.HealthInterval, cfg.HealthTimeout = time.Hour, time.Second // the test runs the rounds
			p := newPicker(t, cfg)
			waitFor(t, "first health round", func() bool { return allSampled(p) })
			p.mu.Lock()
			u := p.ups[0]
			p.mu.Unlock()

			p.failed(u)
			p.failed(u)
			if st, _ := upstreamStatus(p, a.addr); st.Healthy || st.Active {
				t.Fatalf("after two failures: %+v, want unhealthy and inactive", st)
			}
			if _, ok := p.Pick(); ok {
				t.Fatal("an unhealthy upstream was picked")
			}

			switch via {
			case "health check":
				p.round()
			case "request":
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI("http://upstream/")
				if err := p.bal.send(u, req, resp, time.Now().Add(5*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			if st, _ := upstreamStatus(p, a.addr); !st.Healthy || !st.Active {
				t.Fatalf("after a %s reached it: %+v, want healthy and active", via, st)
			}
			if server, ok := p.Pick(); !ok || server != a.addr {
				t.Fatalf("Pick() = %q, %v after recovery", server, ok)
			}
			// The failure count started over: one failure is not two in a row.
			p.failed(u)
			if st, _ := upstreamStatus(p, a.addr); !st.Healthy {
				t.Fatalf("one failure after recovery made it unhealthy: %+v", st)
			}
		})
	}
}
