package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// Router is implemented by handlers that can tell the route template a
// request matches (the capture server's router does); "" when none.
type Router interface {
	Route(r *http.Request) string
}

type serverSpanKey struct{}

// serverSpanName is the server span's name ("POST /api/capture") of the
// request ctx belongs to, or "": Application Insights names a capture's
// operation after it.
func serverSpanName(ctx context.Context) string {
	s, _ := ctx.Value(serverSpanKey{}).(string)
	return s
}

// Middleware returns a wrapper that serves each request inside an HTTP
// server span (otelhttp): an incoming traceparent is continued, and the
// span is named by method and route template ("POST /api/capture",
// "GET /api/inbox/{id}") when next is a Router. SSE responses flush
// through it.
func (t *Telemetry) Middleware() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		router, _ := next.(Router)
		h := otelhttp.NewHandler(next, "",
			otelhttp.WithTracerProvider(t.tp),
			otelhttp.WithPropagators(t.prop),
			// The HTTP metrics are not brainwire's.
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name, _ := method(r.Method)
			var route string
			if router != nil {
				route = router.Route(r)
			}
			if route != "" {
				name += " " + route
			}
			r = r.WithContext(context.WithValue(r.Context(), serverSpanKey{}, name))
			// otelhttp names the span and sets http.route from the
			// pattern, as for an http.ServeMux.
			if route != "" {
				r.Pattern = route
			}
			h.ServeHTTP(w, r)
		})
	}
}
