package main

import (
	"testing"

	"github.com/fiberguard/fiberguard/examples/internal/httpapp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every module answers through the app's router, with rebalance on when a Prometheus is named.
func TestEveryModule(t *testing.T) {
	for _, prom := range []string{"", "http://127.0.0.1:1"} { // nothing answers there: rebalance never sheds
		a := httpapp.New(httpapp.Env("FIBERGUARD_PROMETHEUS_URL", prom))
		httpapp.Check(t, a, handler(a), prom != "")
		a.Close()
	}
}
