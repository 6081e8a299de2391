//go:build linux || darwin || freebsd

package main

import (
	"net/http/httptest"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// processCPU returns the CPU time (user and system) the test process has used so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func burnApp() *fiber.App {
	app := fiber.New()
	app.Get("/burn", burnHandler)
	return app
}

func TestBurnUsesCPUTime(t *testing.T) {
	// On one P, concurrent burns take turns: a loop that watched the wall clock would burn about 50 ms in all,
	// however many ran. Burning CPU time, n of them use n·50 ms. Other load only delays them.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n, ms = 4, 50
	app := burnApp()
	before := processCPU(t)
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			resp, err := app.Test(httptest.NewRequest("GET", "/burn?ms=50", nil), -1)
			if err != nil {
				t.Error(err)
				return
			}
			_ = resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	used := processCPU(t) - before
	for i, code := range codes {
		if code != fiber.StatusOK {
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	if want := n * ms * time.Millisecond * 8 / 10; used < want {
		t.Fatalf("%d concurrent /burn?ms=%d used %v of CPU, want at least %v", n, ms, used, want)
	}
}

func TestBurnBounds(t *testing.T) {
	app := burnApp()
	for q, want := range map[string]int{
		"":                         200, // the default, 5 ms
		"?ms=0":                    200,
		"?ms=1":                    200,
		"?ms=abc":                  400,
		"?ms=-1":                   400,
		"?ms=1.5":                  400,
		"?ms=1001":                 400,
		"?ms=99999999999999999999": 400,
		"?ms=0x10":                 400,
		"?ms=1e3":                  400,
	} {
		resp, err := app.Test(httptest.NewRequest("GET", "/burn"+q, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/burn%s: status %d, want %d", q, resp.StatusCode, want)
		}
	}
}
