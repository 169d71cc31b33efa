package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
// 1 MB of OTLP at some 240 bytes per reasoning chunk. Each request in
// flight holds its encoding and the client's copy of it in gRPC's buffer;
// with requests of 8,192 events, that was about 10 KiB more per capture in
// flight at 1,000 captures (bench/RESULTS.md).
const maxEventsPerExport = 4096

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

// otlpExporter is the OTLP/gRPC span exporter of Start's provider. It
// writes each request with otlpwire, which costs a fraction of the SDK
// exporter's conversion and marshalling (telemetry/BENCHMARKS.md), and
// sends it through the SDK's own OTLP/gRPC client (otlptracegrpc.NewClient),
// which owns the connection and reads the OTEL_EXPORTER_OTLP_* variables:
// TLS, headers, compression, timeout and retries are the SDK's. The client
// takes generated ResourceSpans messages; otlpwire.ResourceSpans hands it
// the request's as messages that carry their encoding unparsed, which
// protobuf marshals back byte for byte.
//
// Requests go out otlpInFlight at a time. The batch processor exports one
// batch after another from one goroutine, waiting for each answer; when
// thousands of captures end at once the box is saturated, every hand-over
// between goroutines of an export (processor, gRPC's writer, its reader)
// waits its turn behind all of them, and one request at a time could not
// keep up: the queue of ended spans overflowed and spans were dropped.
// ExportSpans hands its batch to a goroutine that encodes and sends it, so
// the processor goes on draining the queue; it waits only when
// otlpInFlight requests are unanswered. Failures are reported to the
// OpenTelemetry error handler (as the processor does with the errors it
// gets), and Shutdown waits for every request.
type otlpExporter struct {
	client otlptrace.Client
	// handle gets the errors of requests sent in the background.
	handle func(error)
	// outcome, when set, is told how each batch ended: sent, or not with
	// its error. ExportSpans returns before that is known.
	outcome func(spans int, err error)

	slots    chan struct{} // one per request in flight
	inFlight sync.WaitGroup
	free     chan []byte // buffers of requests answered, for the next
}

// otlpInFlight is how many export requests may be unanswered at once.
const otlpInFlight = 4

// newOTLPExporter is the OTLP/gRPC span exporter for endpoint (and the
// OTEL_EXPORTER_OTLP_* variables). Nothing is dialled until the first
// export.
func newOTLPExporter(ctx context.Context, endpoint string, opts ...otlptracegrpc.Option) (*otlpExporter, error) {
	client := otlptracegrpc.NewClient(append([]otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint)}, opts...)...)
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return &otlpExporter{
		client: client,
		handle: otel.Handle,
		slots:  make(chan struct{}, otlpInFlight),
		free:   make(chan []byte, otlpInFlight),
	}, nil
}

// ExportSpans encodes and sends spans in the background; it waits while
// otlpInFlight requests are unanswered.
func (w *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
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
	// The processor's context ends when this returns; the client's own
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

func (w *otlpExporter) report(spans int, err error) {
	if w.outcome != nil {
		w.outcome(spans, err)
	}
}

// export encodes spans and sends them, in the buffer of an earlier
// request when there is one. The client has marshalled the request by the
// time it returns, so the buffer is free again.
func (w *otlpExporter) export(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var buf []byte
	select {
	case buf = <-w.free:
	default:
	}
	buf = otlpwire.AppendRequest(buf[:0], spans)
	err := w.client.UploadTraces(ctx, otlpwire.ResourceSpans(nil, buf))
	select {
	case w.free <- buf:
	default:
	}
	if err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// wait returns once every request sent has its answer, or ctx ends.
func (w *otlpExporter) wait(ctx context.Context) error {
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

// Shutdown waits for the requests in flight, then closes the connection.
func (w *otlpExporter) Shutdown(ctx context.Context) error {
	return errors.Join(w.wait(ctx), w.client.Stop(ctx))
}
