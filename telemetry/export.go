package telemetry

import (
	"context"
	"errors"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
