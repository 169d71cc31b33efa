package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
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
		n := eventCount(s)
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
//
// Requests go out wireInFlight at a time. The batch processor exports one
// batch after another from one goroutine, waiting for each answer; when
// thousands of captures end at once the box is saturated, every hand-over
// between goroutines of an export (processor, gRPC's writer, its reader)
// waits its turn behind all of them, and one request at a time could not
// keep up: the queue of ended spans overflowed and spans were dropped.
// ExportSpans hands its batch to a goroutine that encodes and sends it, so
// the processor goes on draining the queue; it waits only when
// wireInFlight requests are unanswered. Failures are reported to the
// OpenTelemetry error handler (as the processor does with the errors it
// gets), and Shutdown waits for every request.
type wireExporter struct {
	otlp sdktrace.SpanExporter
	// handle gets the errors of requests sent in the background.
	handle func(error)
	// outcome, when set, is told how each batch ended: sent, or not with
	// its error. ExportSpans returns before that is known.
	outcome func(spans int, err error)

	slots    chan struct{} // one per request in flight
	inFlight sync.WaitGroup
	free     chan []byte // buffers gRPC has given back
}

// wireInFlight is how many export requests may be unanswered at once.
const wireInFlight = 4

// newWireExporter is the OTLP/gRPC span exporter for endpoint (and the
// OTEL_EXPORTER_OTLP_* variables), sending what otlpwire encodes.
func newWireExporter(ctx context.Context, endpoint string, opts ...otlptracegrpc.Option) (*wireExporter, error) {
	opts = append([]otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint),
		otlptracegrpc.WithDialOption(grpc.WithChainUnaryInterceptor(wireInterceptor))}, opts...)
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &wireExporter{
		otlp:   exp,
		handle: otel.Handle,
		slots:  make(chan struct{}, wireInFlight),
		free:   make(chan []byte, wireInFlight),
	}, nil
}

// maxWireRequest is the OTLP exporter's own default bound on a request.
const maxWireRequest = 64 << 20

// exportMethod is the OTLP trace service's export call.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

type wireKey struct{}

// ExportSpans encodes and sends spans in the background; it waits while
// wireInFlight requests are unanswered.
func (w *wireExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		err := fmt.Errorf("traces export: %w", context.Cause(ctx))
		w.report(len(spans), err)
		return err
	}
	// The processor reuses its slice of spans; the spans themselves stay.
	batch := slices.Clone(spans)
	// The processor's context ends when this returns; the exporter's own
	// timeout (OTEL_EXPORTER_OTLP_TIMEOUT) bounds the request.
	ctx = context.WithoutCancel(ctx)
	w.inFlight.Go(func() {
		defer func() { <-w.slots }()
		err := w.export(ctx, batch)
		w.report(len(batch), err)
		if err != nil {
			w.handle(err)
		}
	})
	return nil
}

func (w *wireExporter) report(spans int, err error) {
	if w.outcome != nil {
		w.outcome(spans, err)
	}
}

// export encodes spans and sends them, in a buffer given back by an
// earlier request when there is one.
func (w *wireExporter) export(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var buf []byte
	select {
	case buf = <-w.free:
	default:
	}
	r := &wireRequest{b: otlpwire.AppendRequest(buf[:0], spans), free: w.free}
	r.refs.Store(1)
	defer r.release()
	if len(r.b) > maxWireRequest {
		return fmt.Errorf("traces export: request message too large: %d bytes exceeds %d", len(r.b), maxWireRequest)
	}
	err := w.otlp.ExportSpans(context.WithValue(ctx, wireKey{}, r), []sdktrace.ReadOnlySpan{smallest(spans)})
	if err == nil && !r.sent.Load() {
		err = w.otlp.ExportSpans(ctx, spans)
	}
	return err
}

// wait returns once every request sent has its answer, or ctx ends.
func (w *wireExporter) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		w.inFlight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("traces export: requests still unanswered: %w", context.Cause(ctx))
	}
}

// Shutdown waits for the requests in flight, then shuts the exporter down.
func (w *wireExporter) Shutdown(ctx context.Context) error {
	return errors.Join(w.wait(ctx), w.otlp.Shutdown(ctx))
}

// wireRequest is an encoded ExportTraceServiceRequest on its way. gRPC
// sends its bytes without copying them; it is their buffer pool (see
// wireCodec), so they are reused only once gRPC has let go of them.
type wireRequest struct {
	b    []byte
	sent atomic.Bool
	// refs counts who holds b: the exporter while the call lasts, and
	// each buffer handed to gRPC until gRPC frees it. Buffers too small
	// for gRPC to free are never counted back: such a b is left to the
	// garbage collector.
	refs atomic.Int32
	free chan []byte
}

// Get implements mem.BufferPool; gRPC takes new buffers only to split
// one, which a request it sends whole does not need.
func (r *wireRequest) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put implements mem.BufferPool: gRPC is done with a buffer.
func (r *wireRequest) Put(b *[]byte) {
	if b == &r.b {
		r.release()
	}
}

func (r *wireRequest) release() {
	if r.refs.Add(-1) == 0 {
		select {
		case r.free <- r.b:
		default:
		}
	}
}

// smallest is the span with the fewest events and attributes: the
// exporter converts it only to throw it away.
func smallest(spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	best, size := spans[0], -1
	for _, s := range spans {
		if n := eventCount(s) + len(s.Attributes()) + len(s.Links()); size < 0 || n < size {
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
		r.refs.Add(1)
		return mem.BufferSlice{mem.NewBuffer(&r.b, r)}, nil
	}
	return encoding.GetCodecV2(protoCodecName).Marshal(v)
}

func (wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(protoCodecName).Unmarshal(data, v)
}

func (wireCodec) Name() string { return protoCodecName }

const protoCodecName = "proto"
