package upstreampick

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/upstreampick/core/memnet"
	"github.com/gofiber/fiber/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// requestsMetric is requests_total of a Picker named edge, in the text format.
func requestsMetric(admitted, rejected int) string {
	return fmt.Sprintf(`# HELP fiberguard_upstreampick_requests_total Requests that got an upstream (decision="admitted") or found none (decision="rejected").
# TYPE fiberguard_upstreampick_requests_total counter
fiberguard_upstreampick_requests_total{decision="admitted",name="edge"} %d
fiberguard_upstreampick_requests_total{decision="rejected",name="edge"} %d
`, admitted, rejected)
}

// TestRejectAnswersProxyBalancersErrNoUpstream: with every upstream down, proxy.Balancer's ErrNoUpstream goes to
// an ErrorHandler that calls Reject, which answers as Handler does (both headers, OnReject) and counts the
// request once, though LBClient counted it already. A request Reject sees first (after a Pick that found
// nothing) is counted once too.
func TestRejectAnswersProxyBalancersErrNoUpstream(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Net) {
		reg := prometheus.NewRegistry()
		cfg := testConfig("10.0.0.8:80", deadServer) // nothing answers there
		cfg.Registerer, cfg.Name, cfg.RetryAfter = reg, "edge", 2*time.Second
		var seenRetry, seenBy []string
		cfg.OnReject = func(c fiber.Ctx) error {
			seenRetry = append(seenRetry, c.GetRespHeader(fiber.HeaderRetryAfter))
			seenBy = append(seenBy, c.GetRespHeader("Fiberguard-Rejected-By"))
			return ConfigDefault.OnReject(c)
		}
		p := picker(n, cfg)
		eventually(t, "upstreams unhealthy", func() bool { return allUnhealthy(p) })
		balanced := balancerApp(p)
		own := fiber.New()
		own.Get("/own", func(c fiber.Ctx) error {
			if _, ok := p.Pick(); !ok {
				return p.Reject(c)
			}
			return c.SendString("picked")
		})

		for i, tt := range []struct {
			app  *fiber.App
			path string
		}{{balanced, "/"}, {balanced, "/x"}, {own, "/own"}} {
			path := tt.path
			resp := call(t, tt.app, path)
			if resp.status != fiber.StatusServiceUnavailable || resp.body != "upstreampick: no upstream available\n" {
				t.Fatalf("%s: status %d body %q, want the default OnReject", path, resp.status, resp.body)
			}
			if got := resp.header.Get(fiber.HeaderRetryAfter); got != "2" {
				t.Fatalf("%s: Retry-After %q, want 2", path, got)
			}
			if got := resp.header.Get("Fiberguard-Rejected-By"); got != "upstreampick/edge" {
				t.Fatalf("%s: Fiberguard-Rejected-By %q, want upstreampick/edge", path, got)
			}
			if len(seenBy) != i+1 || seenRetry[i] != "2" || seenBy[i] != "upstreampick/edge" {
				t.Fatalf("%s: OnReject calls saw Retry-After %q and Fiberguard-Rejected-By %q, want one more with 2 and upstreampick/edge",
					path, seenRetry, seenBy)
			}
			if st := p.Status(); st.Rejected != uint64(i+1) || st.Admitted != 0 {
				t.Fatalf("%s: rejected %d admitted %d, want %d and 0: each request counted once", path, st.Rejected, st.Admitted, i+1)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(requestsMetric(0, i+1)), "fiberguard_upstreampick_requests_total"); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
	})
}
