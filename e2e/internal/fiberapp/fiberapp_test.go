package fiberapp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/fiberguard/fiberguard/throttle"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	throttlev3 "github.com/fiberguard/fiberguard/v3/throttle"
)

// serve serves app on a fresh 127.0.0.1 port until the test ends and returns its base URL.
func serve(t *testing.T, app App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Serve(ln) }()
	t.Cleanup(func() {
		if err := app.Shutdown(5 * time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, client *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// On each version, a middleware added with Use runs in front of the routes added after it, on a real listener:
// a throttle of window 1 rejects the second of two concurrent requests with its own headers, and counts both.
func TestMiddlewareInFrontOfRoutes(t *testing.T) {
	Each(t, func(t *testing.T, fv Version) {
		th := fv.NewThrottler(throttlecore.Config[any, any]{Name: "one", DisableMetrics: true, WindowMin: 1, WindowMax: 1})
		t.Cleanup(func() { _ = th.Close() })
		app := fv.NewApp()
		app.Get("/before", func() string { return "not throttled" })
		app.Use(th.Handler())
		entered, release := make(chan struct{}), make(chan struct{})
		app.Get("/hold", func() string {
			close(entered)
			<-release
			return "held"
		})
		base := serve(t, app)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

		held := make(chan string, 1)
		go func() {
			var b []byte
			resp, err := client.Get(base + "/hold")
			if err == nil {
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			held <- fmt.Sprint(string(b), err)
		}()
		<-entered
		resp, body := get(t, client, base+"/hold")
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Fiberguard-Rejected-By") != "throttle/one" ||
			!strings.HasPrefix(body, "throttle: ") {
			t.Errorf("second request: %d %q, Fiberguard-Rejected-By %q; want the throttle's 503", resp.StatusCode, body,
				resp.Header.Get("Fiberguard-Rejected-By"))
		}
		if _, body := get(t, client, base+"/before"); body != "not throttled" {
			t.Errorf("route before the middleware answered %q", body)
		}
		close(release)
		if got := <-held; got != "held<nil>" {
			t.Errorf("first request answered %q, want the route's body", got)
		}
		if s := th.Status(); s.Admitted != 1 || s.Rejected != 1 || s.Name != "one" {
			t.Errorf("status %+v, want one admitted and one rejected by the throttle named one", s)
		}
	})
}

// On each version, a Rebalancer given an App counts that app's open connections.
func TestRebalancerCountsTheAppsConnections(t *testing.T) {
	Each(t, func(t *testing.T, fv Version) {
		app := fv.NewApp()
		cluster := func(context.Context) (rebalancecore.Cluster, error) {
			return rebalancecore.Cluster{Nodes: 2, Average: 1, At: time.Now()}, nil
		}
		r := fv.NewRebalancer(app, rebalancecore.Config[any, any]{Cluster: cluster, Interval: 100 * time.Millisecond, DisableMetrics: true})
		t.Cleanup(func() { _ = r.Close() })
		app.Use(r.Handler())
		app.Get("/", func() string { return "ok" })
		base := serve(t, app)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		get(t, client, base+"/") // one keep-alive connection stays open
		deadline := time.Now().Add(10 * time.Second)
		for r.Status().Connections != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("status %+v, want the app's one open connection", r.Status())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func TestAdapterConfigCopiesEverySetting(t *testing.T) {
	trigger := throttlecore.Trigger{Name: "t", Query: "up == 0"}
	src := throttlecore.Config[any, any]{PrometheusURL: "http://p", Triggers: []throttlecore.Trigger{trigger}, Interval: time.Second,
		FailMode: throttlecore.FailClosed, WindowMin: 2, WindowMax: 3, Name: "n", DisableMetrics: true}
	if got := adapterConfig[throttle.Config](src); got.PrometheusURL != "http://p" || len(got.Triggers) != 1 || got.Triggers[0].Query != trigger.Query ||
		got.Interval != time.Second || got.FailMode != throttlecore.FailClosed || got.WindowMin != 2 || got.WindowMax != 3 ||
		got.Name != "n" || !got.DisableMetrics || got.Next != nil || got.OnReject != nil {
		t.Errorf("v2 config %+v, want the settings of %+v", got, src)
	}
	if got := adapterConfig[throttlev3.Config](src); got.PrometheusURL != "http://p" || got.WindowMax != 3 || got.Name != "n" {
		t.Errorf("v3 config %+v, want the settings of %+v", got, src)
	}

	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "no field Next") {
			t.Errorf("a setting the adapter has with another type: recovered %q, want a panic naming the field", msg)
		}
	}()
	adapterConfig[throttle.Config](throttlecore.Config[any, any]{Next: func(any) bool { return false }})
}

// On each version, InMemory answers through the app's middlewares and routes without a listener, and
// OpenConnections reads -1 before the app serves and then the open connections.
func TestInMemoryAndOpenConnections(t *testing.T) {
	Each(t, func(t *testing.T, fv Version) {
		th := fv.NewThrottler(throttlecore.Config[any, any]{Name: "mem", DisableMetrics: true, WindowMin: 1, WindowMax: 1})
		t.Cleanup(func() { _ = th.Close() })
		app := fv.NewApp()
		app.Use(th.Handler())
		app.Get("/", func() string { return "ok" })
		if got := app.InMemory("/")(); got != http.StatusOK {
			t.Errorf("in memory GET /: %d, want 200", got)
		}
		if got := app.InMemory("/none")(); got != http.StatusNotFound {
			t.Errorf("in memory GET /none: %d, want 404", got)
		}
		if s := th.Status(); s.Admitted != 2 {
			t.Errorf("throttle status %+v, want both in-memory requests admitted through the middleware", s)
		}
		if n := app.OpenConnections(); n != -1 {
			t.Errorf("open connections before serving: %d, want -1", n)
		}
		base := serve(t, app)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		get(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, base+"/")
		deadline := time.Now().Add(10 * time.Second)
		for app.OpenConnections() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("open connections %d, want the client's one keep-alive connection", app.OpenConnections())
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
