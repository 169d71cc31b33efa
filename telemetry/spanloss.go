package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span loss. The SDK's batch span processor drops an ended span when its
// queue is full rather than wait (telemetry never holds up a capture), and
// tells only the SDK's own metrics on the global meter provider, which
// this package never sets: a trace would go missing in silence.
//
// spanPipeline stands in front of one batch processor and keeps the
// bound itself. It counts the spans handed to the processor and not yet
// to its exporter (waiting); a span that would take waiting past the
// limit is dropped here, and counted, instead of being handed on. The
// spans in the processor's queue are among those counted, and its queue
// has one slot more than the limit (for a ForceFlush marker, which takes
// a slot while it waits), so the processor itself never drops one: every
// loss is counted as it happens, not found by a flush later. The limit
// is the queue the processor had plus the batch it fills, which it held
// too: a span dropped here is one it could not have kept either.
//
// A span costs an atomic add on its way in, a batch three on its way
// out; a reasoning chunk costs nothing here.

// Exporters of the span pipelines (AttrTelemetryExporter).
const (
	spanExporterOTLP    = "otlp"
	spanExporterConsole = "console"
)

// Why spans were lost (AttrSpanDropReason).
const (
	dropQueueFull    = "queue_full"    // ended while the queue was full
	dropExportFailed = "export_failed" // handed to the exporter, which could not send them
	dropShutdown     = "shutdown"      // still queued or unanswered when Shutdown gave up
)

// spanTuning is the span pipelines' configuration; Start's is
// defaultSpanTuning, tests shrink it.
type spanTuning struct {
	queue         int // ended spans waiting for the exporter, besides the batch being filled
	batch         int // spans per export
	batchTimeout  time.Duration
	exportTimeout time.Duration
	// lossDelay is how long after a first loss it is logged, so that a
	// burst's losses make one line; lossEvery the least time between two
	// lines.
	lossDelay, lossEvery time.Duration
}

var defaultSpanTuning = spanTuning{
	queue:         spanQueueSize,
	batch:         spanExportBatch,
	batchTimeout:  spanBatchTimeout,
	exportTimeout: spanExportTimeout,
	lossDelay:     time.Second,
	lossEvery:     time.Minute,
}

// spanPipeline is a span processor: one exporter's batch processor, with
// its queue bound and its spans counted (exported, and lost by reason).
// Safe for concurrent use.
type spanPipeline struct {
	exporter string
	next     sdktrace.SpanProcessor
	limit    int64
	log      *slog.Logger
	// flushing lets one ForceFlush at a time through, as the processor's
	// queue has a slot for one flush marker.
	flushing chan struct{}

	waiting  atomic.Int64 // handed to the processor, not yet to the exporter
	received atomic.Int64 // handed to the exporter
	exported atomic.Int64 // sent
	// Lost, by reason.
	queueFull, failed, atStop atomic.Int64

	stopped atomic.Bool // Shutdown began: the processor takes no more spans
	settled atomic.Bool // Shutdown counted what was left; nothing more is counted

	// Loss reports: one line per lossEvery at most, each with the losses
	// since the one before.
	lossDelay, lossEvery time.Duration
	pending              atomic.Bool // a report is scheduled
	mu                   sync.Mutex
	timer                *time.Timer
	last                 time.Time  // of the last line
	logged               spanLosses // as of the last line
	closed               bool       // the final report is written
}

// spanLosses are a pipeline's lost spans by reason.
type spanLosses struct{ queueFull, failed, shutdown int64 }

func (l spanLosses) total() int64 { return l.queueFull + l.failed + l.shutdown }

// newSpanPipeline builds a batch processor exporting to exp, within
// spanPipeline. outcomes says that exp reports how each batch ended
// through the pipeline's outcome itself (it sends in the background, so
// that ExportSpans returning says nothing of it); otherwise ExportSpans's
// error is the batch's outcome.
func newSpanPipeline(exporter string, exp sdktrace.SpanExporter, outcomes bool, t spanTuning, log *slog.Logger) *spanPipeline {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &spanPipeline{
		exporter:  exporter,
		limit:     int64(t.queue + t.batch),
		log:       log,
		flushing:  make(chan struct{}, 1),
		lossDelay: t.lossDelay,
		lossEvery: t.lossEvery,
	}
	p.next = sdktrace.NewBatchSpanProcessor(countedExporter{SpanExporter: exp, p: p, outcomes: outcomes},
		sdktrace.WithMaxQueueSize(int(p.limit)+1),
		sdktrace.WithMaxExportBatchSize(t.batch),
		sdktrace.WithBatchTimeout(t.batchTimeout),
		sdktrace.WithExportTimeout(t.exportTimeout),
	)
	return p
}

var _ sdktrace.SpanProcessor = (*spanPipeline)(nil)

// OnStart implements sdktrace.SpanProcessor.
func (p *spanPipeline) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { p.next.OnStart(ctx, s) }

// OnEnd implements sdktrace.SpanProcessor: the span goes on to the
// processor, or is counted lost when the queue is full. The processor
// exports only sampled spans, and none once it is shut down: those are
// not counted.
func (p *spanPipeline) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() && !p.stopped.Load() {
		if p.waiting.Add(1) > p.limit {
			p.waiting.Add(-1)
			p.queueFull.Add(1)
			p.lost()
			return
		}
	}
	p.next.OnEnd(s)
}

// ForceFlush implements sdktrace.SpanProcessor.
func (p *spanPipeline) ForceFlush(ctx context.Context) error {
	select {
	case p.flushing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.flushing }()
	return p.next.ForceFlush(ctx)
}

// Shutdown implements sdktrace.SpanProcessor: it flushes the processor,
// counts what it could not export in time as lost, and logs every loss
// not yet logged.
func (p *spanPipeline) Shutdown(ctx context.Context) error {
	p.stopped.Store(true)
	err := p.next.Shutdown(ctx)
	if p.settled.CompareAndSwap(false, true) {
		// Spans the processor still held, and those handed to the
		// exporter without an answer, when Shutdown returned.
		left := p.waiting.Swap(0) + p.received.Load() - p.exported.Load() - p.failed.Load()
		if left > 0 {
			p.atStop.Add(left)
		}
	}
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.report(true)
	return err
}

// outcome counts how spans handed to the exporter ended.
func (p *spanPipeline) outcome(spans int, err error) {
	if p.settled.Load() {
		return
	}
	if err != nil {
		p.failed.Add(int64(spans))
		p.lost()
		return
	}
	p.exported.Add(int64(spans))
}

// losses are the pipeline's lost spans so far.
func (p *spanPipeline) losses() spanLosses {
	return spanLosses{p.queueFull.Load(), p.failed.Load(), p.atStop.Load()}
}

// queued is the number of spans ended and not yet handed to the exporter.
func (p *spanPipeline) queued() int64 { return max(p.waiting.Load(), 0) }

// lost schedules a report of the losses, unless one is scheduled: the
// first loss after a quiet spell is logged lossDelay later, the next ones
// lossEvery after the line before. The caller has counted its loss, so a
// report already scheduled, which has not read the counts yet, includes
// it.
func (p *spanPipeline) lost() {
	if p.pending.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending.Load() || p.closed {
		return
	}
	p.pending.Store(true)
	wait := max(p.lossDelay, time.Until(p.last.Add(p.lossEvery)))
	p.timer = time.AfterFunc(wait, func() { p.report(false) })
}

// report logs the losses since the last line, if any; final makes it the
// last report.
func (p *spanPipeline) report(final bool) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = final
	// Cleared before the counts are read: a loss counted after the
	// reading finds no report pending and schedules the next one.
	p.pending.Store(false)
	now := p.losses()
	since := spanLosses{now.queueFull - p.logged.queueFull, now.failed - p.logged.failed, now.shutdown - p.logged.shutdown}
	if since.total() > 0 {
		p.logged, p.last = now, time.Now()
	}
	p.mu.Unlock()
	if since.total() == 0 {
		return
	}
	// Off the capture's path (a timer, or Shutdown): the log may be slow.
	p.log.Warn("telemetry: spans dropped; traces of these captures are incomplete in the trace backend",
		"exporter", p.exporter,
		"spans", since.total(),
		dropQueueFull, since.queueFull,
		dropExportFailed, since.failed,
		dropShutdown, since.shutdown,
		"spans_dropped_total", now.total(),
		"spans_exported_total", p.exported.Load())
}

// countedExporter is the pipeline's exporter: it counts the spans the
// processor hands over (they leave its queue), and, unless the exporter
// reports them itself, how they fared.
type countedExporter struct {
	sdktrace.SpanExporter
	p        *spanPipeline
	outcomes bool
}

func (e countedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	n := int64(len(spans))
	e.p.received.Add(n)
	e.p.waiting.Add(-n)
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if !e.outcomes {
		e.p.outcome(len(spans), err)
	}
	return err
}
