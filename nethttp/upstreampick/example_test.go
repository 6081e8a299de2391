package upstreampick_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/fiberguard/fiberguard/nethttp/upstreampick"
)

// A gateway proxying every request to the nearest healthy upstream.
func ExampleNewPicker() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream saw "+r.URL.Path)
	}))
	defer upstream.Close()

	picker := upstreampick.NewPicker(upstreampick.Config{
		Servers:        []string{upstream.URL},
		DisableMetrics: true,
	})
	defer func() { _ = picker.Close() }()

	mux := http.NewServeMux()
	mux.Handle("/api/", picker) // a Picker is the proxy handler; picker.Handler() is the middleware form
	gateway := httptest.NewServer(mux)
	defer gateway.Close()

	resp, err := http.Get(gateway.URL + "/api/users")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 upstream saw /api/users
}
