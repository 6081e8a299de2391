// Command stdmux is a net/http app on the standard library's ServeMux with every fiberguard module wired in, from
// the net/http modules (github.com/fiberguard/fiberguard/nethttp/...).
//
//	go run ./examples/stdmux                        # listens on 127.0.0.1:8082
//	FIBERGUARD_ADDR=127.0.0.1:0 go run ./examples/stdmux
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
)

const defaultAddr = "127.0.0.1:8082"

// handler is the app: the routes on a ServeMux behind the global middlewares.
func handler(a *httpapp.App) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /work", a.Work)
	mux.Handle("/proxy/", a.Proxy)
	mux.Handle("GET /status", a.Status)
	mux.Handle("GET /metrics", a.Metrics)
	return a.Global(mux)
}

func main() { demo.Main(httpapp.Run("fiberguard net/http example (ServeMux)", defaultAddr, handler)) }
