package gatewayproc

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// TestStartServesAndStops proves the helper's contract: once Start returns, the gateway answers on Addr with
// the environment it was given, and after the test's cleanup it is gone.
func TestStartServesAndStops(t *testing.T) {
	var url string
	t.Run("run", func(t *testing.T) {
		g := Start(t, "FIBERGUARD_UPSTREAMPICK_MODE=random")
		url = g.URL
		client := &http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get(g.URL + "/status?pretty=0")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"mode":"random"`) {
			t.Fatalf("/status: %d %s", resp.StatusCode, body)
		}
		if !strings.Contains(g.Log(), "fiberguard gateway on "+g.URL) {
			t.Fatalf("log lacks the announcement:\n%s", g.Log())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(url + "/status"); err == nil {
		resp.Body.Close()
		t.Fatalf("gateway still answers after its test ended: %s", resp.Status)
	}
}

// TestStartReportsAnExitBeforeListening: a gateway that cannot start fails the test with its log, instead of
// waiting out the timeout.
func TestStartReportsAnExitBeforeListening(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		Start(ft, "FIBERGUARD_UPSTREAMPICK_MODE=nonsense")
	}()
	select {
	case <-done:
	case <-time.After(startTimeout):
		t.Fatal("Start did not return for a gateway that exited")
	}
	for _, f := range ft.cleanups {
		f()
	}
	if !strings.Contains(ft.msg, "exited before listening") || !strings.Contains(ft.msg, "FIBERGUARD_UPSTREAMPICK_MODE") {
		t.Fatalf("Start reported %q", ft.msg)
	}
}

// fakeT records Fatalf instead of failing the real test.
type fakeT struct {
	testing.TB
	msg      string
	cleanups []func()
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(format string, args ...any) {
	f.msg += "error: " + strings.TrimSpace(sprintf(format, args...))
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg += sprintf(format, args...)
	panic("fatal")
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
