package gozero

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"github.com/zeromicro/go-zero/core/load"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-zero starts these at init, for the life of the process: its CPU sampler and its signal handler.
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/stat.init.1.func1"),
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/proc.init.1.func1"))
}

// shedder is a load.Shedder that records what it was told.
type shedder struct {
	overloaded bool
	told       []string
}

type promise struct{ s *shedder }

func (p promise) Pass() { p.s.told = append(p.s.told, "pass") }
func (p promise) Fail() { p.s.told = append(p.s.told, "fail") }

func (s *shedder) Allow() (load.Promise, error) {
	if s.overloaded {
		return nil, load.ErrServiceOverloaded
	}
	return promise{s}, nil
}

func TestMiddleware(t *testing.T) {
	s := &shedder{}
	app := fiber.New()
	app.Use(Middleware(s))
	app.Get("/:status", func(c *fiber.Ctx) error {
		switch c.Params("status") {
		case "error":
			return errors.New("boom")
		case "500":
			return c.SendStatus(fiber.StatusInternalServerError)
		case "404":
			return c.SendStatus(fiber.StatusNotFound)
		}
		return c.SendStatus(fiber.StatusOK)
	})
	h := app.Handler()
	get := func(path string) int {
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.Header.SetMethod(fiber.MethodGet)
		ctx.Request.SetRequestURI(path)
		h(ctx)
		return ctx.Response.StatusCode()
	}

	for _, path := range []string{"/200", "/404", "/500", "/error"} {
		get(path)
	}
	if want := []string{"pass", "pass", "fail", "fail"}; !slices.Equal(s.told, want) {
		t.Fatalf("told %v for 200, 404, 500, error; want %v", s.told, want)
	}
	s.overloaded = true
	if got := get("/200"); got != fiber.StatusServiceUnavailable {
		t.Fatalf("overloaded: status %d, want 503", got)
	}
	if len(s.told) != 4 {
		t.Fatalf("a shed request was reported: %v", s.told)
	}
}

func TestHTTPMiddleware(t *testing.T) {
	s := &shedder{}
	h := HTTPMiddleware(s)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic(http.ErrAbortHandler)
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
			w.WriteHeader(http.StatusOK) // superfluous: the first status is the answer
		case "/404":
			http.NotFound(w, r)
		case "/body":
			_, _ = w.Write([]byte("ok")) // 200 without WriteHeader
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	get := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}

	for _, path := range []string{"/200", "/404", "/body", "/500"} {
		get(path)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handler's panic was swallowed")
			}
		}()
		get("/panic")
	}()
	if want := []string{"pass", "pass", "pass", "fail", "fail"}; !slices.Equal(s.told, want) {
		t.Fatalf("told %v for 200, 404, a body, 500, a panic; want %v", s.told, want)
	}
	s.overloaded = true
	if got := get("/200"); got != http.StatusServiceUnavailable {
		t.Fatalf("overloaded: status %d, want 503", got)
	}
	if len(s.told) != 5 {
		t.Fatalf("a shed request was reported: %v", s.told)
	}
}

// TestCodeWriterUnwrap: http.ResponseController reaches the server's writer through the middleware.
func TestCodeWriterUnwrap(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := http.NewResponseController(&codeWriter{ResponseWriter: rec}).Flush(); err != nil || !rec.Flushed {
		t.Fatalf("Flush through the middleware: %v, flushed %v", err, rec.Flushed)
	}
}
