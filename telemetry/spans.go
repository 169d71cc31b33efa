package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span export: ended spans wait in the SDK's batch span processor and go
// to the SDK's exporter (otlptracegrpc, stdouttrace). spanPipeline adds
// two things around them.
//
// Requests bounded by events: an invoke_agent span carries every
// reasoning chunk of its run (some 240 bytes each on the wire), and a
// collector refuses a request over its gRPC limit, 4 MiB by default. A
// batch is split into requests of at most maxEventsPerExport span events
// (a span of a longer run goes alone). Measured in TestCaptureTelemetry:
// two 10,000-chunk runs ending together make one batch of 4.8 MB, which
// the collector refuses, and both runs' traces are lost; split, the
// largest request is 2.4 MB (one run's span).
//
// Spans lost are counted: the SDK's processor drops a span that ends
// while its queue is full, and tells only the global meter provider,
// which brainwire never sets, so a trace would go missing from Jaeger in
// silence. The pipeline keeps the queue's bound itself (spans ended and
// not yet handed to the exporter, against the limit: an atomic add per
// span), so every span lost is counted (brainwire.telemetry.spans.dropped
// by reason, which the dashboard's Telemetry health panel shows) and
// logged.

// maxEventsPerExport bounds the span events of one export request: about
// 250 KB of OTLP at some 240 bytes per reasoning chunk. The SDK's exporter
// builds a request's messages all at once (about 800 bytes per event);
// smaller requests keep that off the heap while captures stream.
const maxEventsPerExport = 1024

// Exporters of the span pipelines (AttrTelemetryExporter).
const (
	spanExporterOTLP    = "otlp"
	spanExporterConsole = "console"
)

// Why spans were lost (AttrSpanDropReason).
const (
	dropQueueFull    = "queue_full"    // ended while the queue was full
	dropExportFailed = "export_failed" // the exporter could not send them
	dropShutdown     = "shutdown"      // still queued when Shutdown gave up
)

// spanTuning is the span pipelines' configuration; tests shrink it.
type spanTuning struct {
	queue         int // ended spans waiting for the exporter, the batch being filled included
	batch         int // spans per batch
	batchTimeout  time.Duration
	exportTimeout time.Duration
}

// The queue holds a burst of thousands of captures ending at once, a
// dozen spans each; its slots cost 16 bytes each.
var defaultSpanTuning = spanTuning{queue: 65536, batch: 512, batchTimeout: 2 * time.Second, exportTimeout: 10 * time.Second}

// spanPipeline is one exporter's batch span processor, its queue bounded
// and its spans counted. Safe for concurrent use.
type spanPipeline struct {
	sdktrace.SpanProcessor // the SDK's batch processor
	exporter               string
	next                   sdktrace.SpanExporter
	limit                  int64
	log                    *slog.Logger

	waiting                           atomic.Int64 // ended, not yet handed to the exporter
	exported, queueFull, failed, left atomic.Int64

	mu      sync.Mutex
	logged  int64 // losses as of the last log line
	lastLog time.Time
}

func newSpanPipeline(exporter string, exp sdktrace.SpanExporter, t spanTuning, log *slog.Logger) *spanPipeline {
	p := &spanPipeline{exporter: exporter, next: exp, limit: int64(t.queue), log: log}
	// The processor's queue has room beyond the limit for the markers of
	// ForceFlush calls: it never drops a span itself.
	p.SpanProcessor = sdktrace.NewBatchSpanProcessor(pipelineExporter{p},
		sdktrace.WithMaxQueueSize(t.queue+8),
		sdktrace.WithMaxExportBatchSize(t.batch),
		sdktrace.WithBatchTimeout(t.batchTimeout),
		sdktrace.WithExportTimeout(t.exportTimeout),
	)
	return p
}

// OnEnd implements sdktrace.SpanProcessor: the span goes on to the
// processor, or is counted lost when the queue is full. The processor
// exports only sampled spans: the others are not counted.
func (p *spanPipeline) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() && p.waiting.Add(1) > p.limit {
		p.waiting.Add(-1)
		p.queueFull.Add(1)
		return
	}
	p.SpanProcessor.OnEnd(s)
}

// Shutdown implements sdktrace.SpanProcessor: it flushes the processor,
// counts what it could not export in time as lost, and logs the losses
// not yet logged.
func (p *spanPipeline) Shutdown(ctx context.Context) error {
	err := p.SpanProcessor.Shutdown(ctx)
	p.left.Add(max(p.waiting.Swap(0), 0))
	p.report(true)
	return err
}

func (p *spanPipeline) lost() int64 { return p.queueFull.Load() + p.failed.Load() + p.left.Load() }

// report logs the spans lost since the last line: after an export at
// most once a minute (the first at once), and at Shutdown.
func (p *spanPipeline) report(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lost := p.lost()
	if lost == p.logged || (!final && time.Since(p.lastLog) < time.Minute) {
		return
	}
	p.log.Warn("telemetry: spans dropped; traces of these captures are incomplete in the trace backend",
		"exporter", p.exporter, "spans", lost-p.logged,
		"spans_dropped_total", lost, dropQueueFull, p.queueFull.Load(), dropExportFailed, p.failed.Load(), dropShutdown, p.left.Load(),
		"spans_exported_total", p.exported.Load())
	p.logged, p.lastLog = lost, time.Now()
}

// pipelineExporter is what the processor exports to: it sends a batch
// in requests of at most maxEventsPerExport events and counts the spans.
type pipelineExporter struct{ p *spanPipeline }

func (e pipelineExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	p := e.p
	p.waiting.Add(-int64(len(spans)))
	var errs []error
	for len(spans) > 0 {
		n, events := 0, 0
		for n < len(spans) && (n == 0 || events+len(spans[n].Events()) <= maxEventsPerExport) {
			events += len(spans[n].Events())
			n++
		}
		if err := p.next.ExportSpans(ctx, spans[:n]); err != nil {
			p.failed.Add(int64(n))
			errs = append(errs, err)
		} else {
			p.exported.Add(int64(n))
		}
		spans = spans[n:]
	}
	p.report(false)
	return errors.Join(errs...)
}

func (e pipelineExporter) Shutdown(ctx context.Context) error { return e.p.next.Shutdown(ctx) }
