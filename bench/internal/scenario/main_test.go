package scenario

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// appEnv makes the test binary act as a scenario app, so StartApp can be tested on a real child process.
const appEnv = "SCENARIO_TEST_APP"

func TestMain(m *testing.M) {
	if os.Getenv(appEnv) == "1" {
		serveTestApp()
		return
	}
	goleak.VerifyTestMain(m)
}

// serveTestApp is the app of the tests: StartApp passes -addr ADDR last.
func serveTestApp() {
	addr := os.Args[len(os.Args)-1]
	if err := AwaitStart(); err != nil {
		os.Exit(2)
	}
	// 1 ms of CPU per /work request: enough for /proc/PID/stat (10 ms ticks) to see a few dozen requests.
	app := NewApp(AppSpec{Iterations: Calibrate(time.Millisecond), Stats: func() any { return map[string]string{"signal": "test"} }})
	if err := app.Listen(addr); err != nil {
		os.Exit(3)
	}
}
