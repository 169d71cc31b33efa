package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the proto codec wireCodec defers to
	"google.golang.org/grpc/mem"

	"github.com/brainwire/brainwire/telemetry/otlpwire"
)

// Span export: the batch span processor hands over up to spanExportBatch
// ended spans at a time. Many spans per request keep the exporter up with
// thousands of captures ending at once (with 16 per request, a burst of
// 5,000 captures overflowed the queue and whole traces were dropped), but
// an invoke_agent span carries every reasoning chunk of its run, and a
// request must stay well under a collector's message limit (4 MiB by
// default for OTLP/gRPC). eventBoundedExporter splits each batch into
// requests of at most maxEventsPerExport span events, which bounds a
// request's size whatever the runs: a span of a long run goes alone.

// maxEventsPerExport bounds the span events of one export request: about
// 2 MB of OTLP at some 240 bytes per reasoning chunk.
const maxEventsPerExport = 8192

type eventBoundedExporter struct {
	sdktrace.SpanExporter
	maxEvents int
}

func (e eventBoundedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var errs []error
	start, events := 0, 0
	for i, s := range spans {
		n := len(s.Events())
		if i > start && events+n > e.maxEvents {
			if err := e.SpanExporter.ExportSpans(ctx, spans[start:i]); err != nil {
				errs = append(errs, err)
			}
			start, events = i, 0
		}
		events += n
	}
	if start < len(spans) {
		if err := e.SpanExporter.ExportSpans(ctx, spans[start:]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// wireExporter hands the OTLP exporter spans already encoded by otlpwire,
// which costs a fraction of the exporter's own conversion and marshalling
// (see otlpwire). Everything else stays the exporter's: the connection,
// TLS, headers, compression, timeout and retries, as the OTEL_EXPORTER_OTLP_*
// variables set them. The encoded request rides on the context to
// wireInterceptor, a unary interceptor on the exporter's connection, which
// sends those bytes in place of the request the exporter built; the
// exporter is given one span of the batch to build that request from, as
// it exports nothing when given none. Should the request ever reach gRPC
// without the interceptor seeing it, the batch is exported the exporter's
// own way, so nothing is lost (the one span given, which the exporter sent
// in place of the batch, then goes twice).
type wireExporter struct {
	otlp sdktrace.SpanExporter

	mu  sync.Mutex // one export at a time: they share the buffer
	enc otlpwire.Encoder
}

// newWireExporter is the OTLP/gRPC span exporter for endpoint (and the
// OTEL_EXPORTER_OTLP_* variables), sending what otlpwire encodes.
func newWireExporter(ctx context.Context, endpoint string, opts ...otlptracegrpc.Option) (*wireExporter, error) {
	opts = append([]otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint),
		otlptracegrpc.WithDialOption(grpc.WithChainUnaryInterceptor(wireInterceptor))}, opts...)
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &wireExporter{otlp: exp}, nil
}

// maxWireRequest is the OTLP exporter's own default bound on a request.
const maxWireRequest = 64 << 20

// exportMethod is the OTLP trace service's export call.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

type wireKey struct{}

// wireRequest is an encoded ExportTraceServiceRequest on its way.
type wireRequest struct {
	b    []byte
	sent atomic.Bool
}

func (w *wireExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &wireRequest{b: w.enc.Encode(spans)}
	if len(r.b) > maxWireRequest {
		w.enc = otlpwire.Encoder{}
		return fmt.Errorf("traces export: request message too large: %d bytes exceeds %d", len(r.b), maxWireRequest)
	}
	err := w.otlp.ExportSpans(context.WithValue(ctx, wireKey{}, r), []sdktrace.ReadOnlySpan{smallest(spans)})
	if err != nil {
		// gRPC may still hold the bytes of a call that failed or timed
		// out: the next request gets a buffer of its own.
		w.enc = otlpwire.Encoder{}
		return err
	}
	if !r.sent.Load() {
		return w.otlp.ExportSpans(ctx, spans)
	}
	return nil
}

func (w *wireExporter) Shutdown(ctx context.Context) error { return w.otlp.Shutdown(ctx) }

// smallest is the span with the fewest events and attributes: the
// exporter converts it only to throw it away.
func smallest(spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	best, size := spans[0], -1
	for _, s := range spans {
		if n := len(s.Events()) + len(s.Attributes()) + len(s.Links()); size < 0 || n < size {
			best, size = s, n
		}
	}
	return best
}

// wireInterceptor sends the encoded request the context carries, if any.
func wireInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if r, ok := ctx.Value(wireKey{}).(*wireRequest); ok && method == exportMethod {
		r.sent.Store(true)
		return invoker(ctx, method, r, reply, cc, append(opts, grpc.ForceCodecV2(wireCodec{}))...)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// wireCodec sends a wireRequest's bytes as they are and is gRPC's proto
// codec for everything else (the service's answer).
type wireCodec struct{}

func (wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*wireRequest); ok {
		return mem.BufferSlice{mem.SliceBuffer(r.b)}, nil
	}
	return encoding.GetCodecV2(protoCodecName).Marshal(v)
}

func (wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(protoCodecName).Unmarshal(data, v)
}

func (wireCodec) Name() string { return protoCodecName }

const protoCodecName = "proto"
