package main

import (
	"testing"

	"github.com/fiberguard/fiberguard/examples/internal/httpapp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The in-process upstreams are fasthttp servers: its Date refresher and idle-worker cleaner outlive them.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

// Every module answers through the app's router, with rebalance on when a Prometheus is named.
func TestEveryModule(t *testing.T) {
	for _, prom := range []string{"", "http://127.0.0.1:1"} { // nothing answers there: rebalance never sheds
		a, err := httpapp.New(httpapp.Env("FIBERGUARD_PROMETHEUS_URL", prom))
		if err != nil {
			t.Fatal(err)
		}
		httpapp.Check(t, a, handler(a), prom != "")
		a.Close()
	}
}
