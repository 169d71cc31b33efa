// Package telemetrytest holds the telemetry backends tests run against: an
// in-process OTLP/gRPC receiver (traces and metrics) and an Application
// Insights ingestion endpoint.
package telemetrytest

import (
	"context"
	"encoding/hex"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP/gRPC collector for tests: it implements the trace
// and metrics collector services on 127.0.0.1 and keeps what it receives.
type Receiver struct {
	addr string
	srv  *grpc.Server

	mu       sync.Mutex
	spans    []*Span
	metrics  []*metricspb.ResourceMetrics
	requests []proto.Message // every request, encoded on demand
	largest  int             // the largest trace request's size in bytes
	held     chan struct{}   // trace exports wait for it to close, if set
}

// Hold makes trace exports wait until Release, as a collector that has
// fallen behind does.
func (r *Receiver) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = make(chan struct{})
	}
}

// Release lets held trace exports, and those after them, through.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil {
		close(r.held)
		r.held = nil
	}
}

// Span is one received span with its resource and scope.
type Span struct {
	*tracepb.Span
	Resource *commonpb.KeyValueList
	Scope    string
}

// NewReceiver starts a receiver on 127.0.0.1; it stops when the test
// ends. Like a collector, it refuses requests over gRPC's default 4 MiB.
func NewReceiver(t testing.TB) *Receiver {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlp receiver: %v", err)
	}
	r := &Receiver{addr: l.Addr().String(), srv: grpc.NewServer()}
	colltrace.RegisterTraceServiceServer(r.srv, traceService{r: r})
	collmetrics.RegisterMetricsServiceServer(r.srv, metricsService{r: r})
	go func() { _ = r.srv.Serve(l) }()
	t.Cleanup(r.srv.Stop)
	return r
}

// Endpoint is the receiver's OTLP endpoint URL (http: no TLS).
func (r *Receiver) Endpoint() string { return "http://" + r.addr }

type traceService struct {
	colltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	s.r.mu.Lock()
	held := s.r.held
	s.r.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.requests = append(s.r.requests, req)
	s.r.largest = max(s.r.largest, proto.Size(req))
	for _, rs := range req.GetResourceSpans() {
		res := &commonpb.KeyValueList{Values: rs.GetResource().GetAttributes()}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.r.spans = append(s.r.spans, &Span{Span: sp, Resource: res, Scope: ss.GetScope().GetName()})
			}
		}
	}
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	collmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(_ context.Context, req *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.requests = append(s.r.requests, req)
	s.r.metrics = append(s.r.metrics, req.GetResourceMetrics()...)
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []*Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Span(nil), r.spans...)
}

// Trace returns the spans of one trace (hex trace id).
func (r *Receiver) Trace(traceID string) []*Span {
	var out []*Span
	for _, s := range r.Spans() {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

// LargestTraceRequest is the size in bytes of the largest trace export
// received.
func (r *Receiver) LargestTraceRequest() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.largest
}

// Contains reports whether any received payload (traces or metrics, as
// protobuf JSON, strings unescaped) contains s.
func (r *Receiver) Contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.requests {
		p, _ := protojson.Marshal(m)
		if strings.Contains(string(p), s) {
			return true
		}
	}
	return false
}

// Metric returns the last received data of the metric called name, or nil.
func (r *Receiver) Metric(name string) *metricspb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last *metricspb.Metric
	for _, rm := range r.metrics {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if m.GetName() == name {
					last = m
				}
			}
		}
	}
	return last
}

// MetricNames returns the name of every metric received, once each.
func (r *Receiver) MetricNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, rm := range r.metrics {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if !slices.Contains(names, m.GetName()) {
					names = append(names, m.GetName())
				}
			}
		}
	}
	return names
}

// MetricResources returns the resource of every metrics export received,
// in order.
func (r *Receiver) MetricResources() []*resourcepb.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*resourcepb.Resource, 0, len(r.metrics))
	for _, rm := range r.metrics {
		out = append(out, rm.GetResource())
	}
	return out
}

// Attr returns the attribute key of kvs as a Go value (string, int64,
// float64, bool), or nil when absent.
func Attr(kvs []*commonpb.KeyValue, key string) any {
	for _, kv := range kvs {
		if kv.GetKey() != key {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			return v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			return v.BoolValue
		}
		return kv.GetValue().String()
	}
	return nil
}

// HasAttrs reports whether kvs holds every attribute of want (Attr's
// values; nil for one that must be absent).
func HasAttrs(kvs []*commonpb.KeyValue, want map[string]any) bool {
	for k, v := range want {
		if Attr(kvs, k) != v {
			return false
		}
	}
	return true
}
