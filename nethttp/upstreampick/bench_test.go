package upstreampick

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"
)

// The accept path of a Picker is a proxied request, which httputil.ReverseProxy dominates; the benchmarks set the
// Picker's own paths beside their baselines: Next skipping and the rejection beside a pass-through middleware,
// the proxied request beside a plain ReverseProxy to the same upstream on 127.0.0.1.

// passThrough is a middleware that does nothing but call next.
func passThrough(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

func serveLoop(b *testing.B, h http.Handler) {
	b.Helper()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

func BenchmarkPassThrough(b *testing.B) { serveLoop(b, passThrough(ok)) }

func BenchmarkNextSkips(b *testing.B) {
	cfg := benchConfig("127.0.0.1:1")
	cfg.Next = func(*http.Request) bool { return true }
	p := NewPicker(cfg)
	defer func() { _ = p.Close() }()
	serveLoop(b, p.Handler()(ok))
}

func BenchmarkReject(b *testing.B) {
	cfg := benchConfig(deadAddrB(b))
	p := NewPicker(cfg)
	defer func() { _ = p.Close() }()
	deadline := time.Now().Add(5 * time.Second)
	for !allUnhealthy(p) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	serveLoop(b, p.Handler()(ok))
}

func BenchmarkProxy(b *testing.B) {
	up := httptest.NewServer(ok)
	defer up.Close()
	p := NewPicker(benchConfig(up.URL))
	defer func() { _ = p.Close() }()
	proxyLoop(b, p.Handler()(ok))
}

func BenchmarkReverseProxyBaseline(b *testing.B) {
	up := httptest.NewServer(ok)
	defer up.Close()
	target, _ := url.Parse(up.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	proxyLoop(b, &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.SetXForwarded()
	}, Transport: tr})
}

func proxyLoop(b *testing.B, h http.Handler) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

func benchConfig(servers ...string) Config {
	return Config{Servers: servers, HealthInterval: 20 * time.Millisecond, DisableMetrics: true}
}

func deadAddrB(b *testing.B) string {
	b.Helper()
	s := httptest.NewServer(ok)
	addr := s.Listener.Addr().String()
	s.Close()
	return addr
}

// discard is a ResponseWriter that keeps its headers and status only.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }
