package throttle

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/throttle/core/coretest"
	"github.com/gofiber/fiber/v3/log"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLogsGoToFibersLog: what the engine reports (an invalid query at error level, a failing trigger and a
// duplicate registration as warnings) is written by Fiber's logger.
func TestLogsGoToFibersLog(t *testing.T) {
	logs := &coretest.Buffer{}
	log.SetOutput(logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	reg := prometheus.NewRegistry()
	failing := func(err error) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return false, err }
	}
	th := NewThrottler(Config{Name: "api", Registerer: reg, Interval: time.Hour, Triggers: []Trigger{
		{Name: "typo", Func: failing(&promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"})},
		{Name: "down", Func: failing(errors.New("connection refused"))},
	}})
	defer th.Close()
	NewThrottler(Config{Name: "api", Registerer: reg}).Close()
	coretest.WaitFor(t, func() bool {
		s := th.Status()
		return s.Triggers[0].Evaluations == 1 && s.Triggers[1].Evaluations == 1
	})
	for _, want := range []string{
		`[Error] throttle: trigger "typo": its function reports an invalid query`,
		`[Warn] throttle: trigger "down": connection refused`,
		`[Warn] throttle "api": metrics already registered`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("Fiber's log lacks %q:\n%s", want, logs)
		}
	}
}
