// Package gozero wraps go-zero's adaptive shedder as a Fiber and as a net/http middleware, for comparison with
// loadshed.
//
// It is apart from package bench because importing go-zero's core/load has effects at init in every binary that
// links it: automaxprocs sets GOMAXPROCS from the cgroup quota, a goroutine samples CPU every 250 ms and logs
// statistics to stdout every minute, and core/proc traps SIGINT and SIGTERM (re-raising them seconds later).
// Only the commands that compare against go-zero import it.
package gozero

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/zeromicro/go-zero/core/load"
	"github.com/zeromicro/go-zero/core/stat"
)

// DisableLogs stops go-zero's periodic CPU, memory and shedding statistics, which would land in the middle of a
// command's output.
func DisableLogs() {
	stat.DisableLog()
	load.DisableLog()
}

// Middleware sheds with s as go-zero's own HTTP server does: 503 when Allow refuses, and the request's outcome
// reported to the shedder (Fail for an error or a 5xx, Pass otherwise).
func Middleware(s load.Shedder) fiber.Handler {
	return func(c *fiber.Ctx) error {
		promise, err := s.Allow()
		if errors.Is(err, load.ErrServiceOverloaded) {
			return c.SendStatus(fiber.StatusServiceUnavailable)
		}
		if err != nil {
			return err
		}
		err = c.Next()
		if err != nil || c.Response().StatusCode() >= fiber.StatusInternalServerError {
			promise.Fail()
		} else {
			promise.Pass()
		}
		return err
	}
}

// HTTPMiddleware is Middleware for net/http: 503 when Allow refuses, and Fail for a 5xx, Pass otherwise (net/http
// handlers return no error). go-zero's own rest/handler.SheddingHandler is not used: it logs every dropped request
// and keeps go-zero's stat counters, costs the Fiber wrapping does not pay, and it would link go-zero's rest
// package into the app.
func HTTPMiddleware(s load.Shedder) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			promise, err := s.Allow()
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
			// Deferred: net/http recovers a handler's panic and goes on serving, so a panicking request must still
			// be reported (as a failure) before the panic goes on up.
			defer func() {
				if p := recover(); p != nil {
					promise.Fail()
					panic(p)
				}
				if cw.code >= http.StatusInternalServerError {
					promise.Fail()
				} else {
					promise.Pass()
				}
			}()
			next.ServeHTTP(cw, r)
		})
	}
}

// codeWriter records the status a handler answers with; a handler that writes a body without WriteHeader
// answers 200.
type codeWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *codeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (flushing, deadlines).
func (w *codeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
