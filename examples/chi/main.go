// Command chi is a net/http app on the chi router with every fiberguard module wired in, from the net/http
// modules (github.com/fiberguard/fiberguard/nethttp/...): chi takes their func(http.Handler) http.Handler
// middlewares as they are.
//
//	go run ./examples/chi                        # listens on 127.0.0.1:8083
//	FIBERGUARD_ADDR=127.0.0.1:0 go run ./examples/chi
//
// Routes: GET /work?ms=N&wait=M (N ms of CPU and M ms of waiting behind the global loadshed and a throttle), ANY
// /proxy/... (upstreampick's reverse proxy over two in-process upstreams), GET /status (every module's Status)
// and GET /metrics. rebalance is on when FIBERGUARD_PROMETHEUS_URL names the Prometheus that scrapes
// every node.
package main

import (
	"net/http"

	"github.com/fiberguard/fiberguard/examples/internal/demo"
	"github.com/fiberguard/fiberguard/examples/internal/httpapp"
	"github.com/go-chi/chi/v5"
)

const defaultAddr = "127.0.0.1:8083"

// handler is the app: the global middlewares on a chi router, then its routes.
func handler(a *httpapp.App) http.Handler {
	r := chi.NewRouter()
	r.Use(a.Global)
	r.Method(http.MethodGet, "/work", a.Work)
	r.Handle("/proxy/*", a.Proxy)
	r.Method(http.MethodGet, "/status", a.Status)
	r.Method(http.MethodGet, "/metrics", a.Metrics)
	return r
}

func main() { demo.Main(httpapp.Run("fiberguard net/http example (chi)", defaultAddr, handler)) }
