package main

import (
	"testing"

	"github.com/fiberguard/fiberguard/examples/internal/httpapp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, httpapp.LeakOptions...) }

// Every module answers through the app's router, with rebalance on when a Prometheus is named.
func TestEveryModule(t *testing.T) { httpapp.CheckApp(t, handler) }
