package load

import (
	"context"
	"net"
	"sync/atomic"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
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

	// Application Insights batches (AIBytes compressed) and their items:
	// AIChunkItems are "Reasoning chunk" traces, AIRequestItems requests.
	AIRequests     int64 `json:"ai_requests,omitempty"`
	AIBytes        int64 `json:"ai_bytes,omitempty"`
	AIItems        int64 `json:"ai_items,omitempty"`
	AIChunkItems   int64 `json:"ai_chunk_items,omitempty"`
	AIRequestItems int64 `json:"ai_request_items,omitempty"`
	AIMalformed    int64 `json:"ai_malformed,omitempty"`
}

// Sink is an OTLP/gRPC receiver that reads only what it counts: a
// collector stand-in that costs the exporting process nothing more than a
// real one in another process would. TrackHandler is its Application
// Insights ingestion endpoint, counted the same way.
type Sink struct {
	srv *grpc.Server
	c   sinkCounts
}

type sinkCounts struct {
	traceRequests, traceBytes, metricRequests, metricBytes atomic.Int64
	spans, events, chunkEvents, chunksDeclared, dropped    atomic.Int64
	malformed                                              atomic.Int64

	aiRequests, aiBytes, aiItems, aiChunkItems, aiRequestItems, aiMalformed atomic.Int64
}

// NewSink returns a sink; Serve it on a listener.
func NewSink() *Sink {
	s := &Sink{}
	s.srv = grpc.NewServer(grpc.ForceServerCodec(sinkCodec{c: &s.c}))
	colltrace.RegisterTraceServiceServer(s.srv, sinkTraces{})
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
		AIRequests: c.aiRequests.Load(), AIBytes: c.aiBytes.Load(), AIItems: c.aiItems.Load(),
		AIChunkItems: c.aiChunkItems.Load(), AIRequestItems: c.aiRequestItems.Load(), AIMalformed: c.aiMalformed.Load(),
	}
}

type sinkTraces struct {
	colltrace.UnimplementedTraceServiceServer
}

func (sinkTraces) Export(context.Context, *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type sinkMetrics struct {
	collmetrics.UnimplementedMetricsServiceServer
}

func (sinkMetrics) Export(context.Context, *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

// sinkCodec counts a request from its bytes and leaves the message empty.
type sinkCodec struct{ c *sinkCounts }

func (sinkCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }
func (sinkCodec) Name() string                  { return "proto" }

func (k sinkCodec) Unmarshal(b []byte, v any) error {
	switch v.(type) {
	case *colltrace.ExportTraceServiceRequest:
		k.c.traceRequests.Add(1)
		k.c.traceBytes.Add(int64(len(b)))
		if !k.c.countTraces(b) {
			k.c.malformed.Add(1)
		}
	case *collmetrics.ExportMetricsServiceRequest:
		k.c.metricRequests.Add(1)
		k.c.metricBytes.Add(int64(len(b)))
	}
	return nil
}

// Field numbers of the OTLP trace messages walked.
const (
	fieldResourceSpans = 1 // ExportTraceServiceRequest
	fieldScopeSpans    = 2 // ResourceSpans
	fieldSpans         = 2 // ScopeSpans
	fieldSpanAttrs     = 9 // Span
	fieldSpanEvents    = 11
	fieldSpanDropped   = 12
	fieldEventName     = 2 // Span.Event
	fieldKVKey         = 1 // KeyValue
	fieldKVValue       = 2
	fieldAnyInt        = 3 // AnyValue.int_value

	chunkEventName = "reasoning.chunk"
	chunkCountKey  = "brainwire.capture.reasoning_chunks"
)

// countTraces walks an ExportTraceServiceRequest; false when it is not
// well formed.
func (c *sinkCounts) countTraces(b []byte) bool {
	return eachField(b, func(num protowire.Number, rs []byte) bool {
		if num != fieldResourceSpans {
			return true
		}
		return eachField(rs, func(num protowire.Number, ss []byte) bool {
			if num != fieldScopeSpans {
				return true
			}
			return eachField(ss, func(num protowire.Number, span []byte) bool {
				if num != fieldSpans {
					return true
				}
				c.spans.Add(1)
				return c.countSpan(span)
			})
		})
	})
}

func (c *sinkCounts) countSpan(span []byte) bool {
	for len(span) > 0 {
		num, typ, n := protowire.ConsumeTag(span)
		if n < 0 {
			return false
		}
		span = span[n:]
		if num == fieldSpanDropped && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(span)
			if m < 0 {
				return false
			}
			c.dropped.Add(int64(v))
			span = span[m:]
			continue
		}
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, span)
			if m < 0 {
				return false
			}
			span = span[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(span)
		if m < 0 {
			return false
		}
		span = span[m:]
		switch num {
		case fieldSpanEvents:
			c.events.Add(1)
			name, ok := stringField(v, fieldEventName)
			if !ok {
				return false
			}
			if name == chunkEventName {
				c.chunkEvents.Add(1)
			}
		case fieldSpanAttrs:
			key, ok := stringField(v, fieldKVKey)
			if !ok {
				return false
			}
			if key == chunkCountKey {
				if n, ok := intValue(v); ok {
					c.chunksDeclared.Add(n)
				}
			}
		}
	}
	return true
}

// eachField calls fn with every length-delimited field of b; other fields
// are skipped. It stops, false, at malformed input or when fn says so.
func eachField(b []byte, fn func(protowire.Number, []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return false
		}
		b = b[m:]
		if !fn(num, v) {
			return false
		}
	}
	return true
}

// stringField is the last value of string field want in message b.
func stringField(b []byte, want protowire.Number) (string, bool) {
	var out string
	ok := eachField(b, func(num protowire.Number, v []byte) bool {
		if num == want {
			out = string(v)
		}
		return true
	})
	return out, ok
}

// intValue reads KeyValue.value.int_value.
func intValue(kv []byte) (int64, bool) {
	var out int64
	found := false
	eachField(kv, func(num protowire.Number, v []byte) bool {
		if num != fieldKVValue {
			return true
		}
		for len(v) > 0 {
			n, typ, k := protowire.ConsumeTag(v)
			if k < 0 {
				return false
			}
			v = v[k:]
			if n == fieldAnyInt && typ == protowire.VarintType {
				x, m := protowire.ConsumeVarint(v)
				if m < 0 {
					return false
				}
				out, found = int64(x), true
				return true
			}
			m := protowire.ConsumeFieldValue(n, typ, v)
			if m < 0 {
				return false
			}
			v = v[m:]
		}
		return true
	})
	return out, found
}
