package server

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// logFailures wraps the API so that every answer with a 5xx status is
// logged with its cause, whatever route gave it: a 500 "internal error"
// tells the client nothing on purpose, so the log must tell the operator
// everything. A handler that panics is logged with its stack and answered
// 500 (when nothing was written yet) instead of a dropped connection.
func (s *Server) logFailures(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				sw.cause = fmt.Errorf("handler panicked: %v\n%s", v, debug.Stack())
				if sw.status == 0 {
					writeJSON(sw, http.StatusInternalServerError, map[string]string{"detail": "internal error"})
				}
			}
			if sw.status < 500 && v == nil {
				return
			}
			var cause any = sw.cause
			if sw.cause == nil {
				cause = "none recorded"
			}
			s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
				"status", sw.status, "user", sw.user, "error", cause)
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status a handler answered, the error behind
// it (noteCause) and the user the request acts for (noteUser): the key
// check puts the user in the context of the request it passes on, which
// is not the request logFailures holds.
type statusWriter struct {
	http.ResponseWriter
	status int
	cause  error
	user   string
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, read
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteCause records why the request is failing, for logFailures.
func noteCause(w http.ResponseWriter, err error) {
	if sw, ok := w.(*statusWriter); ok {
		sw.cause = err
	}
}

// noteUser records the user an authenticated request acts for, for
// logFailures.
func noteUser(w http.ResponseWriter, user string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.user = user
	}
}
