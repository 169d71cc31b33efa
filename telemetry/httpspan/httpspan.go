// Package httpspan puts every request to the capture server in an HTTP
// server span: an incoming traceparent is continued, and the span is named
// by method and route template ("POST /api/capture", "GET /api/inbox/{id}")
// so that a capture's trace starts where the phone's request came in.
//
// It knows nothing of captures; the capture's own span (invoke_agent) is
// the telemetry package's, started under this one.
package httpspan

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the server spans.
const ScopeName = "github.com/brainwire/brainwire/telemetry/httpspan"

// Config configures Middleware.
type Config struct {
	// TracerProvider creates the spans; nil records none.
	TracerProvider trace.TracerProvider
	// Propagator reads the incoming trace context; nil means W3C trace
	// context and baggage.
	Propagator propagation.TextMapPropagator
}

// Router is implemented by handlers that can tell the route template a
// request matches (the capture server's router does); "" when none.
type Router interface {
	Route(r *http.Request) string
}

type nameKey struct{}

// Name returns the server span's name ("POST /api/capture") of the
// request ctx belongs to, or "".
func Name(ctx context.Context) string {
	s, _ := ctx.Value(nameKey{}).(string)
	return s
}

// Middleware returns a wrapper that serves next inside a server span. The
// route template comes from next when it is a Router or an http.ServeMux;
// otherwise the span is named by method alone. The response writer keeps
// its Flush and Unwrap, so SSE streams flush through it.
func Middleware(cfg Config) func(http.Handler) http.Handler {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	_, noop := tp.(tracenoop.TracerProvider)
	tracer := tp.Tracer(ScopeName)
	prop := cfg.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			method := Method(r.Method)
			name := method.Value.AsString()
			if name == "_OTHER" {
				name = "HTTP"
			}
			route := routeOf(next, r)
			if route != "" {
				name += " " + route
			}
			var attrs []attribute.KeyValue
			if !noop {
				attrs = requestAttrs(r, method, route)
			}
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			ctx = context.WithValue(ctx, nameKey{}, name)
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
}

func requestAttrs(r *http.Request, method attribute.KeyValue, route string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs, method, semconv.URLPath(r.URL.Path), semconv.URLScheme(scheme))
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
	return append(attrs, semconv.NetworkProtocolVersion(strconv.Itoa(r.ProtoMajor)+"."+strconv.Itoa(r.ProtoMinor)))
}

// routeOf finds the route template next would serve r with.
func routeOf(next http.Handler, r *http.Request) string {
	switch h := next.(type) {
	case Router:
		return h.Route(r)
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

var knownMethods = map[string]attribute.KeyValue{
	http.MethodGet:     semconv.HTTPRequestMethodGet,
	http.MethodPost:    semconv.HTTPRequestMethodPost,
	http.MethodPut:     semconv.HTTPRequestMethodPut,
	http.MethodPatch:   semconv.HTTPRequestMethodPatch,
	http.MethodDelete:  semconv.HTTPRequestMethodDelete,
	http.MethodHead:    semconv.HTTPRequestMethodHead,
	http.MethodOptions: semconv.HTTPRequestMethodOptions,
}

// Method is the http.request.method attribute of m, kept to the known set
// ("_OTHER" for the rest) so a client cannot make up span names.
func Method(m string) attribute.KeyValue {
	if kv, ok := knownMethods[m]; ok {
		return kv
	}
	return semconv.HTTPRequestMethodOther
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
