package httpspan_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire/telemetry/httpspan"
)

// routes is a handler that knows its route templates, as the capture
// server's router does.
type routes struct {
	http.Handler
	route string
}

func (r routes) Route(*http.Request) string { return r.route }

func TestMiddlewareNamesSpansByRoute(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	mw := httpspan.Middleware(httpspan.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpspan.Name(r.Context()) != "GET /api/inbox/{id}" {
			t.Errorf("name in the request context: %q", httpspan.Name(r.Context()))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the middleware: %v", err)
		}
		if _, ok := w.(http.Flusher); !ok {
			t.Error("the middleware hides http.Flusher")
		}
	})
	sm := http.NewServeMux()
	sm.HandleFunc("POST /api/capture/{kind}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })

	for _, c := range []struct {
		h            http.Handler
		method, path string
		name         string
		code         int
	}{
		{mw(routes{stream, "/api/inbox/{id}"}), "GET", "/api/inbox/abc", "GET /api/inbox/{id}", 200},
		{mw(routes{http.NotFoundHandler(), ""}), "GET", "/nowhere", "GET", 404},
		{mw(sm), "POST", "/api/capture/voice", "POST /api/capture/{kind}", 500},
		{mw(http.NotFoundHandler()), "BREW", "/pot", "HTTP", 404},
	} {
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
		spans := rec.Ended()
		s := spans[len(spans)-1]
		code := attr(s, "http.response.status_code")
		if s.Name() != c.name || code.AsInt64() != int64(c.code) || s.SpanKind() != trace.SpanKindServer {
			t.Errorf("%s %s: span %q, status %d; want %q, %d", c.method, c.path, s.Name(), code.AsInt64(), c.name, c.code)
		}
		if (c.code >= 500) != (s.Status().Code == codes.Error) {
			t.Errorf("%s %s: span status %v", c.method, c.path, s.Status())
		}
	}
}

// TestMiddlewareContinuesTheCallersTrace: an incoming traceparent makes
// the server span a child of the caller's.
func TestMiddlewareContinuesTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	mw := httpspan.Middleware(httpspan.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	req := httptest.NewRequest(http.MethodPost, "/api/capture", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	mw(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), req)
	s := rec.Ended()[0]
	if s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("span %v, parent %v", s.SpanContext(), s.Parent())
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}
