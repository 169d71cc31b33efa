package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// Metric names of this package (besides the GenAI semantic conventions'
// gen_ai.client.operation.duration and gen_ai.client.token.usage).
const (
	MetricCaptures           = "brainwire.captures"
	MetricReplays            = "brainwire.capture.replays"
	MetricActiveCaptures     = "brainwire.captures.active"
	MetricConfidence         = "brainwire.capture.confidence"
	MetricTimeToOutcome      = "brainwire.capture.time_to_outcome"
	MetricReasoningChunks    = "brainwire.capture.reasoning_chunks"
	MetricUpstreamErrors     = "brainwire.upstream.errors"
	MetricUpstreamRetries    = "brainwire.upstream.retries"
	MetricCorrections        = "brainwire.corrections"
	MetricFollowUps          = "brainwire.follow_ups"
	MetricAppInsightsSent    = "brainwire.appinsights.items.sent"
	MetricAppInsightsDropped = "brainwire.appinsights.items.dropped"
	MetricAppInsightsQueue   = "brainwire.appinsights.queue.length"
	MetricSpansExported      = "brainwire.telemetry.spans.exported"
	MetricSpansDropped       = "brainwire.telemetry.spans.dropped"
	MetricSpansQueue         = "brainwire.telemetry.spans.queue.length"
)

// Attribute keys of this package.
const (
	AttrRunID              = attribute.Key("run_id")    // the capture's run id (COMPLETE's runId)
	AttrThreadID           = attribute.Key("thread_id") // the capture's thread id
	AttrChunkIndex         = attribute.Key("chunk_index")
	AttrReasoningText      = attribute.Key("reasoning_text")
	AttrFoundryRunID       = attribute.Key("foundry.run_id")
	AttrFoundryThreadID    = attribute.Key("foundry.thread_id")
	AttrFoundryRunStatus   = attribute.Key("foundry.run.status")
	AttrKind               = attribute.Key("brainwire.capture.kind")
	AttrOutcome            = attribute.Key("brainwire.capture.outcome")
	AttrBucket             = attribute.Key("brainwire.capture.bucket")
	AttrConfidence         = attribute.Key("brainwire.capture.confidence")
	AttrChunkCount         = attribute.Key("brainwire.capture.reasoning_chunks")
	AttrTimeToOutcomeMS    = attribute.Key("brainwire.capture.time_to_outcome_ms")
	AttrInboxItemID        = attribute.Key("brainwire.inbox_item_id")
	AttrQuestion           = attribute.Key("brainwire.capture.question")
	AttrErrorMessage       = attribute.Key("brainwire.error.message")
	AttrUpstreamErrSource  = attribute.Key("brainwire.upstream.error.source")
	AttrUpstreamErrRetried = attribute.Key("brainwire.upstream.error.retried") // a failed attempt sent again
	AttrDropReason         = attribute.Key("brainwire.appinsights.drop_reason")
	AttrTelemetryExporter  = attribute.Key("brainwire.telemetry.exporter")    // otlp, console
	AttrSpanDropReason     = attribute.Key("brainwire.telemetry.drop_reason") // queue_full, export_failed, shutdown
	AttrEvalRunID          = attribute.Key("brainwire.eval.run_id")
	AttrReasoningCut       = attribute.Key("brainwire.capture.reasoning_truncated")
	AttrCorrectionKind     = attribute.Key("brainwire.correction.kind")
	AttrCorrectionRepeat   = attribute.Key("brainwire.correction.repeat")
	AttrAgentOutcome       = attribute.Key("brainwire.correction.agent_outcome")
	AttrAgentBucket        = attribute.Key("brainwire.correction.agent_bucket")
	AttrHumanBucket        = attribute.Key("brainwire.correction.human_bucket")
	AttrFollowUpRound      = attribute.Key("brainwire.follow_up.round")
	AttrFollowUpOutcome    = attribute.Key("brainwire.follow_up.outcome")
	AttrFollowUpRunID      = attribute.Key("brainwire.follow_up.run_id")
	AttrRetryStatus        = attribute.Key("brainwire.upstream.retry.status") // 429, 503, connection_reset, ...
	AttrRetryWaitMS        = attribute.Key("brainwire.upstream.retry.wait_ms")
)

// EventRetry is the event on the client span of a call sent again.
const EventRetry = "retry"

// Bucket boundaries: the semantic conventions' for the GenAI histograms,
// and what a person tuning the agent reads for the others.
var (
	durationBuckets   = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets      = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	confidenceBuckets = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1}
	// From the simulator's tens of milliseconds to a model's tens of
	// seconds, each bound 1.3 to 2 times the one below it.
	outcomeBuckets = []float64{0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30, 60}
	chunkBuckets   = []float64{1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000}
)

type instruments struct {
	captures      metric.Int64Counter
	replays       metric.Int64Counter
	active        metric.Int64UpDownCounter
	confidence    metric.Float64Histogram
	timeToOutcome metric.Float64Histogram
	chunks        metric.Int64Histogram
	upstreamErrs  metric.Int64Counter
	retries       metric.Int64Counter
	corrections   metric.Int64Counter
	followUps     metric.Int64Counter
	shadowTrials  metric.Int64Counter
	shadowDropped metric.Int64Counter
	shadowScored  metric.Int64Counter
	evalCases     metric.Int64Counter
	opDuration    genaiconv.ClientOperationDuration
	tokens        genaiconv.ClientTokenUsage
	regs          []metric.Registration
}

func newInstruments(m metric.Meter, ai *appinsights.Exporter, spans []*spanPipeline) (instruments, error) {
	var in instruments
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	newCounter := func(name, unit, description string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(description))
		add(err)
		return c
	}
	var err error
	in.captures = newCounter(MetricCaptures, "{capture}",
		"Captures finished, by outcome, bucket, kind and agent version.")
	in.replays = newCounter(MetricReplays, "{capture}",
		"Repeated capture requests (same Idempotency-Key) answered with the first one's outcome, by outcome and kind: no agent ran, nothing was filed, and brainwire.captures does not count them.")
	in.upstreamErrs = newCounter(MetricUpstreamErrors, "{error}",
		"Errors from the agent service: HTTP statuses, transport failures, failed runs, in-stream errors; by type, where they showed, whether the call was sent again after it (retried: the caller never saw it) and agent version.")
	in.retries = newCounter(MetricUpstreamRetries, "{retry}",
		"Calls to the agent service sent again after it refused them for a moment or the connection failed before its answer, by operation, what refused it (the status, or the connection's failure) and agent version.")
	in.corrections = newCounter(MetricCorrections, "{correction}",
		"People's recategorizations of what the agent filed, by the agent's outcome and bucket, the person's bucket, the verdict and the agent version.")
	in.followUps = newCounter(MetricFollowUps, "{follow_up}",
		"Follow-ups of misunderstood captures, by round, what the follow-up made of the capture and the version of the agent that asked.")
	in.shadowTrials = newCounter(MetricShadowTrials, "{trial}",
		"Shadow trials kept: candidate instructions run on a live capture beside the production run, by candidate version, production agent version, each arm's bucket (empty: it did not resolve the capture) and whether they agree.")
	in.shadowDropped = newCounter(MetricShadowDropped, "{trial}",
		"Sampled captures whose shadow run was dropped or not kept, by reason.")
	in.shadowScored = newCounter(MetricShadowScored, "{score}",
		"Arms of shadow trials scored against the person's first recategorize of the item, by arm (production, candidate), candidate version and whether the arm was correct.")
	in.evalCases = newCounter(MetricEvalCases, "{run}",
		"Runs of an evaluation's cases (brainwire eval), by agent version, evaluation run id and whether the run gave the answer its case expects; every trial counts.")
	in.active, err = m.Int64UpDownCounter(MetricActiveCaptures, metric.WithUnit("{capture}"),
		metric.WithDescription("Capture streams open now."))
	add(err)
	in.confidence, err = m.Float64Histogram(MetricConfidence, metric.WithUnit("1"),
		metric.WithDescription("Confidence of filed captures."), metric.WithExplicitBucketBoundaries(confidenceBuckets...))
	add(err)
	in.timeToOutcome, err = m.Float64Histogram(MetricTimeToOutcome, metric.WithUnit("s"),
		metric.WithDescription("Time from the capture's start to its outcome (or error) event."),
		metric.WithExplicitBucketBoundaries(outcomeBuckets...))
	add(err)
	in.chunks, err = m.Int64Histogram(MetricReasoningChunks, metric.WithUnit("{chunk}"),
		metric.WithDescription("Reasoning chunks per capture."), metric.WithExplicitBucketBoundaries(chunkBuckets...))
	add(err)
	in.opDuration, err = genaiconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	in.tokens, err = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	add(err)
	if ai != nil {
		sent, err := m.Int64ObservableCounter(MetricAppInsightsSent, metric.WithUnit("{item}"),
			metric.WithDescription("Items Application Insights ingestion accepted."))
		add(err)
		dropped, err := m.Int64ObservableCounter(MetricAppInsightsDropped, metric.WithUnit("{item}"),
			metric.WithDescription("Items not sent to Application Insights, by reason; captures never wait for it."))
		add(err)
		queue, err := m.Int64ObservableGauge(MetricAppInsightsQueue, metric.WithUnit("{item}"),
			metric.WithDescription("Items waiting to be sent to Application Insights."))
		add(err)
		var (
			full     = metric.WithAttributes(AttrDropReason.String("queue_full"))
			failed   = metric.WithAttributes(AttrDropReason.String("send_failed"))
			shutdown = metric.WithAttributes(AttrDropReason.String("shutdown"))
		)
		if len(errs) == 0 {
			reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
				s := ai.Stats()
				o.ObserveInt64(sent, s.Sent)
				o.ObserveInt64(dropped, s.DroppedQueueFull, full)
				o.ObserveInt64(dropped, s.DroppedSendFailed, failed)
				o.ObserveInt64(dropped, s.DroppedShutdown, shutdown)
				o.ObserveInt64(queue, int64(ai.QueueLen()))
				return nil
			}, sent, dropped, queue)
			add(err)
			if reg != nil {
				in.regs = append(in.regs, reg)
			}
		}
	}
	if len(spans) > 0 {
		add(registerSpanMetrics(m, spans, &in))
	}
	if err := errors.Join(errs...); err != nil {
		return instruments{}, fmt.Errorf("telemetry: creating instruments: %w", err)
	}
	return in, nil
}

func (in *instruments) unregister() {
	for _, r := range in.regs {
		_ = r.Unregister()
	}
}

// registerSpanMetrics reports the span pipelines' exported and lost spans
// and their queues. Every series is observed from the start, at zero until
// something happens, so that Prometheus counts the first losses.
func registerSpanMetrics(m metric.Meter, spans []*spanPipeline, in *instruments) error {
	exported, err1 := m.Int64ObservableCounter(MetricSpansExported, metric.WithUnit("{span}"),
		metric.WithDescription("Spans the trace exporter sent, by exporter."))
	dropped, err2 := m.Int64ObservableCounter(MetricSpansDropped, metric.WithUnit("{span}"),
		metric.WithDescription("Spans ended but never sent, by exporter and reason: their traces are incomplete in the trace backend; captures never wait for telemetry."))
	queue, err3 := m.Int64ObservableGauge(MetricSpansQueue, metric.WithUnit("{span}"),
		metric.WithDescription("Spans ended and waiting for the trace exporter, by exporter."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, p := range spans {
			e := AttrTelemetryExporter.String(p.exporter)
			o.ObserveInt64(exported, p.exported.Load(), metric.WithAttributes(e))
			for reason, n := range map[string]int64{dropQueueFull: p.queueFull.Load(), dropExportFailed: p.failed.Load(), dropShutdown: p.left.Load()} {
				o.ObserveInt64(dropped, n, metric.WithAttributes(e, AttrSpanDropReason.String(reason)))
			}
			o.ObserveInt64(queue, max(p.waiting.Load(), 0), metric.WithAttributes(e))
		}
		return nil
	}, exported, dropped, queue)
	if reg != nil {
		in.regs = append(in.regs, reg)
	}
	return err
}
