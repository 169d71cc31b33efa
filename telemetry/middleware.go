package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

type routeKey struct{}

// routeFrom returns the server span's name ("POST /api/capture") set by
// Middleware, or "".
func routeFrom(ctx context.Context) string {
	s, _ := ctx.Value(routeKey{}).(string)
	return s
}

// Middleware returns next inside an HTTP server span. The trace context
// of an incoming traceparent header is continued. The span is named by
// method and route template ("POST /api/capture", "GET /api/inbox/{id}")
// when next is a gorilla/mux router or an http.ServeMux, else by method.
// The response writer keeps its Flush and Unwrap, so SSE streams flush.
func (t *Telemetry) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		method := httpMethod(r.Method)
		name := method.Value.AsString()
		if name == "_OTHER" {
			name = "HTTP"
		}
		route := routeOf(next, r)
		if route != "" {
			name += " " + route
		}
		var attrs []attribute.KeyValue
		if t.tracing {
			attrs = make([]attribute.KeyValue, 0, 10)
			attrs = append(attrs, method, semconv.URLPath(r.URL.Path), semconv.URLScheme(scheme(r)))
			if route != "" {
				attrs = append(attrs, semconv.HTTPRoute(route))
			}
			if host, port := splitHostPort(r.Host); host != "" {
				attrs = append(attrs, semconv.ServerAddress(host))
				if port > 0 {
					attrs = append(attrs, semconv.ServerPort(port))
				}
			}
			if ip, _ := splitHostPort(r.RemoteAddr); ip != "" {
				attrs = append(attrs, semconv.ClientAddress(ip))
			}
			if ua := r.UserAgent(); ua != "" {
				attrs = append(attrs, semconv.UserAgentOriginal(ua))
			}
			attrs = append(attrs, semconv.NetworkProtocolVersion(strconv.Itoa(r.ProtoMajor)+"."+strconv.Itoa(r.ProtoMinor)))
		}
		ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		ctx = context.WithValue(ctx, routeKey{}, name)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
				span.SetStatus(codes.Error, fmt.Sprint(v))
				span.End()
				panic(v)
			}
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			span.SetAttributes(semconv.HTTPResponseStatusCode(code))
			if code >= 500 {
				span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(code)))
				span.SetStatus(codes.Error, "")
			}
			span.End()
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// routeOf finds the route template next would serve r with.
func routeOf(next http.Handler, r *http.Request) string {
	switch h := next.(type) {
	case *mux.Router:
		var m mux.RouteMatch
		if h.Match(r, &m) && m.Route != nil && m.MatchErr == nil {
			if tpl, err := m.Route.GetPathTemplate(); err == nil {
				return tpl
			}
		}
	case interface {
		Handler(*http.Request) (http.Handler, string)
	}:
		_, pattern := h.Handler(r)
		// ServeMux patterns may start with a method and a host.
		if i := strings.IndexByte(pattern, ' '); i >= 0 {
			pattern = pattern[i+1:]
		}
		if i := strings.IndexByte(pattern, '/'); i > 0 {
			pattern = pattern[i:]
		}
		return pattern
	}
	return ""
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func splitHostPort(hp string) (string, int) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return hp, 0
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps http.Flusher for handlers that assert it.
func (w *statusWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
