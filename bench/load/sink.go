package load

import (
	"context"
	"net"
	"sync/atomic"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// SinkStats is what an OTLP sink received.
type SinkStats struct {
	TraceRequests  int64 `json:"trace_requests"`
	TraceBytes     int64 `json:"trace_bytes"`
	MetricRequests int64 `json:"metric_requests"`
	MetricBytes    int64 `json:"metric_bytes"`
	Spans          int64 `json:"spans"`
	Events         int64 `json:"events"`
	// ChunkEvents are the reasoning.chunk span events; ChunksDeclared the
	// sum of brainwire.capture.reasoning_chunks over the spans that carry
	// it. Equal when no chunk was lost on the way.
	ChunkEvents    int64 `json:"reasoning_chunk_events"`
	ChunksDeclared int64 `json:"reasoning_chunks_declared"`
	DroppedEvents  int64 `json:"dropped_events"`
	Malformed      int64 `json:"malformed"`
}

// Sink is an OTLP/gRPC receiver that counts what it is sent: a collector
// stand-in that costs the exporting process nothing more than a real one
// in another process would.
type Sink struct {
	srv *grpc.Server
	c   sinkCounts
}

type sinkCounts struct {
	traceRequests, traceBytes, metricRequests, metricBytes atomic.Int64
	spans, events, chunkEvents, chunksDeclared, dropped    atomic.Int64
	malformed                                              atomic.Int64
}

// NewSink returns a sink; Serve it on a listener.
func NewSink() *Sink {
	s := &Sink{}
	s.srv = grpc.NewServer(grpc.ForceServerCodec(sinkCodec{c: &s.c}))
	colltrace.RegisterTraceServiceServer(s.srv, sinkTraces{c: &s.c})
	collmetrics.RegisterMetricsServiceServer(s.srv, sinkMetrics{})
	return s
}

// Serve answers on l until Stop.
func (s *Sink) Serve(l net.Listener) error { return s.srv.Serve(l) }

// Stop finishes the calls under way and stops.
func (s *Sink) Stop() { s.srv.GracefulStop() }

// Stats returns the counts so far.
func (s *Sink) Stats() SinkStats {
	c := &s.c
	return SinkStats{
		TraceRequests: c.traceRequests.Load(), TraceBytes: c.traceBytes.Load(),
		MetricRequests: c.metricRequests.Load(), MetricBytes: c.metricBytes.Load(),
		Spans: c.spans.Load(), Events: c.events.Load(), ChunkEvents: c.chunkEvents.Load(),
		ChunksDeclared: c.chunksDeclared.Load(), DroppedEvents: c.dropped.Load(), Malformed: c.malformed.Load(),
	}
}

type sinkTraces struct {
	colltrace.UnimplementedTraceServiceServer
	c *sinkCounts
}

const (
	chunkEventName = "reasoning.chunk"
	chunkCountKey  = "brainwire.capture.reasoning_chunks"
)

func (k sinkTraces) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	c := k.c
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, span := range ss.Spans {
				c.spans.Add(1)
				c.events.Add(int64(len(span.Events)))
				c.dropped.Add(int64(span.DroppedEventsCount))
				for _, ev := range span.Events {
					if ev.Name == chunkEventName {
						c.chunkEvents.Add(1)
					}
				}
				for _, kv := range span.Attributes {
					if kv.Key == chunkCountKey {
						c.chunksDeclared.Add(kv.Value.GetIntValue())
					}
				}
			}
		}
	}
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type sinkMetrics struct {
	collmetrics.UnimplementedMetricsServiceServer
}

func (sinkMetrics) Export(context.Context, *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

// sinkCodec is gRPC's proto codec counting the bytes of each request; it
// leaves metrics undecoded, as nothing in them is counted.
type sinkCodec struct{ c *sinkCounts }

func (sinkCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }
func (sinkCodec) Name() string                  { return "proto" }

func (k sinkCodec) Unmarshal(b []byte, v any) error {
	switch v := v.(type) {
	case *colltrace.ExportTraceServiceRequest:
		k.c.traceRequests.Add(1)
		k.c.traceBytes.Add(int64(len(b)))
		if err := proto.Unmarshal(b, v); err != nil {
			k.c.malformed.Add(1)
			return err
		}
	case *collmetrics.ExportMetricsServiceRequest:
		k.c.metricRequests.Add(1)
		k.c.metricBytes.Add(int64(len(b)))
	}
	return nil
}
