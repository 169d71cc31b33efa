// Package telemetry records captures for the person tuning the agent:
// OpenTelemetry traces and metrics (OTLP/gRPC) with the GenAI semantic
// conventions of go.opentelemetry.io/otel/semconv/v1.41.0, and Application
// Insights items. Nothing it does waits on a backend: a slow, failing or
// unreachable collector or ingestion endpoint costs captures nothing but
// the telemetry itself.
//
// # Spans
//
// One trace per capture:
//
//	POST /api/capture                    server span (package httpspan); an incoming traceparent is continued
//	└─ invoke_agent Classifier           the agent run (Telemetry as a brainwire.Observer), kind client
//	   ├─ process_thread_run             one client span per call to the agent service, named by the provider (WrapTransport)
//	   ├─ execute_tool file_capture      one per tool call (WrapTools)
//	   │  └─ store.file                  store operations (WrapStore)
//	   └─ submit_tool_outputs
//
// invoke_agent carries gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.agent.id and .name, gen_ai.agent.version (which instructions ran:
// the agent's declared version, else their hash; the one version every
// signal carries), gen_ai.request.model, brainwire.eval.run_id (captures of
// `brainwire eval`), gen_ai.conversation.id (the Foundry thread),
// gen_ai.response.id (the Foundry run), gen_ai.usage.input_tokens and
// .output_tokens, run_id and thread_id (the capture's, as COMPLETE echoes
// them), and the outcome: brainwire.capture.outcome (classified,
// low_confidence, misunderstood, unresolved, error), .bucket, .confidence,
// .kind (text, voice, follow_up), .reasoning_chunks and
// .time_to_outcome_ms. A brainwire.capture.outcome event marks the moment
// the phone got its outcome. Upstream spans carry the HTTP method, URL
// (query reduced to api-version), status, the Foundry thread and run ids
// and foundry.run.status, the last run state seen on that response; a
// streamed response's span ends when its body ends. With an agent served
// by Google ADK's API server the upstream calls are create_session and
// run_sse, and the ADK session and invocation stand where the Foundry
// thread and run do.
//
// With content on, it also carries gen_ai.system_instructions, and when it
// ends gen_ai.output.messages: the run's reasoning assembled into one
// assistant message, so that a person reads one paragraph instead of the
// chunk events; it is cut at Config.MaxReasoningBytes (its part then has
// "truncated": true, and the span brainwire.capture.reasoning_truncated).
//
// # Corrections are evaluations
//
// A person's recategorize, and a follow-up that answers a misunderstood
// capture's question, judge the agent run that filed the item (the item
// keeps the run's trace and span ids). Telemetry records each as a span
// "evaluation human_bucket" or "evaluation follow_up_resolution" in the
// trace of the request that made it, with a span link to the judged
// run's invoke_agent span and a gen_ai.evaluation.result event
// (gen_ai.evaluation.name, .score.label correct/incorrect or
// resolved/unresolved, .score.value 1 or 0, .explanation such as
// "People -> Ideas"); as an Application Insights custom event of that name
// in the judged run's operation (operation id = its trace id, parent = its
// span); and in brainwire.corrections and brainwire.follow_ups.
//
// # Reasoning chunks, lossless
//
// Each chunk of the agent's chain-of-thought becomes, as it arrives, a
// reasoning.chunk event on the invoke_agent span (run_id, chunk_index,
// reasoning_text, foundry.run_id, foundry.thread_id) and an Application
// Insights trace item ("Reasoning chunk", Information, with run_id,
// chunk_index, reasoning_text, agent_run_id, agent_thread_id, thread_id,
// and the trace id as operation id, the invoke_agent span as parent).
//
// The OpenTelemetry SDK keeps 128 events per span by default and drops the
// oldest beyond that. The tracer provider Start builds lifts that limit
// for its spans (SpanLimits: EventCountLimit -1; OTEL_SPAN_EVENT_COUNT_LIMIT
// is not applied, the other OTEL_SPAN_* limits are), so a run's chunks all
// stay on the one span, numbered 0..n-1 without a gap, with a dropped
// count of zero. A provider passed to New must be configured the same way.
//
// Start's provider does not keep the chunks as SDK events: its spans end
// through ChunkEvents, which keeps each chunk as its time, index and text
// (the ids a run's chunks share kept once) and hands them to the exporters
// as the span's reasoning.chunk events, the same events in the same order
// as the SDK would have kept. That is about 40 bytes per chunk against the
// SDK's 400, and a quarter of the work per chunk or less
// (BenchmarkReasoningChunk).
// A provider passed to New without Config.ChunkEvents gets SDK events.
//
// Continuation spans (a new span every N chunks) were the alternative. They
// were not chosen: a span's events are held in memory until the span ends
// either way, so splitting saves nothing while the run lasts; they would
// scatter one run's reasoning over several spans, whereas Jaeger lists a
// span's events in order in one place and Tempo queries them on the span
// (TraceQL { name =~ "invoke_agent.*" } with event:name = "reasoning.chunk").
// The cost is bounded by the run: about 40 bytes per chunk in memory plus
// its text (400 as SDK events), released when the span is exported, and about 240 bytes per
// chunk on the wire (a 5,000-chunk span encodes to 1.2 MB). Span batches
// are large (512 spans, so that thousands of captures ending at once are
// exported, not dropped) and split into requests of at most 4,096 span
// events (about 1 MB), so that requests stay under the 4 MiB a gRPC
// receiver accepts by default; collectors that receive runs of tens of
// thousands of chunks need a larger limit (the compose configuration in
// dashboards/ sets 32 MiB).
//
// # Span export
//
// Start's OTLP exporter is a SpanExporter of this package: otlpwire writes
// each request from the SDK's spans (a chunk kept by ChunkEvents is
// written without building its event), a quarter of the SDK exporter's
// conversion and marshalling per chunk or less (BenchmarkSpanExport), and
// the SDK's own OTLP/gRPC client (otlptracegrpc.NewClient) sends it: the
// connection, TLS, headers, compression, timeout and retries are the
// SDK's, as OTEL_EXPORTER_OTLP_* set them. The client takes the request's
// resource spans as generated messages that carry otlpwire's encoding
// (otlpwire.ResourceSpans). Up to four requests are in flight, so that
// the batch processor goes on draining its queue while the collector
// answers.
//
// # Lost spans
//
// Ended spans wait in a queue for the exporter (65,536 spans and the batch
// being filled, per exporter). When captures end faster than the
// collector takes their spans, the queue fills, and a span ending then is
// dropped rather than waited for: captures never wait for telemetry. The
// SDK's batch processor would drop it in silence; Start's pipelines keep
// the queue's bound themselves (a count of the spans ended and not yet
// handed to the exporter, against the limit; one atomic add per span), so
// every span lost is counted the moment it is lost, and a trace missing
// from Jaeger or Tempo shows (the SDK's own self-observability counts a
// full queue as well, but only on the global meter provider, behind an
// experimental switch, and counts neither the spans this exporter sends
// nor those Shutdown abandons):
//
//   - brainwire.telemetry.spans.dropped, a counter of the spans that never
//     reached the collector, by brainwire.telemetry.exporter (otlp,
//     console) and brainwire.telemetry.drop_reason: queue_full (ended
//     while the queue was full), export_failed (the exporter gave up on
//     them: collector unreachable, refusing, too slow), shutdown (still
//     queued or unanswered when Shutdown's deadline came). Every series
//     reads 0 from the start, so an alert on its increase, e.g.
//     increase(brainwire_telemetry_spans_dropped_total[5m]) > 0, fires on
//     the first loss, and the series is there when there is none;
//   - brainwire.telemetry.spans.exported, the spans sent, by exporter: the
//     share lost is dropped / (dropped + exported);
//   - brainwire.telemetry.spans.queue.length, a gauge of the spans
//     waiting for the exporter, by exporter: near the limit, spans are
//     about to be lost;
//   - a warning in the log, "telemetry: spans dropped; ...", with the
//     number lost since the line before, by reason, and the totals: the
//     first a second after a first loss (a burst makes one line), then at
//     most one a minute, and one at Shutdown for what is left.
//
// The spans exported plus those dropped, once the queue is empty, are
// the (sampled) spans ended. Losses at Shutdown reach the log; the final
// metric export may precede them. A provider passed to New counts
// nothing.
//
// # Application Insights
//
// appinsights.Exporter sends to <IngestionEndpoint>/v2/track in the
// ApplicationInsights-Go wire format. Tracking never blocks: items wait in
// a bounded queue for four sending goroutines; overflow, refused items and
// items still queued at Shutdown's deadline are counted
// (brainwire.appinsights.items.dropped). Each capture also sends a request
// item with its outcome, duration and counts.
//
// # Metrics
//
// Every capture metric carries gen_ai.agent.version, so that dashboards
// compare instructions. brainwire.captures (by outcome, bucket, kind),
// brainwire.corrections (by the agent's outcome and bucket, the person's
// bucket and gen_ai.evaluation.score.label), brainwire.follow_ups (by
// round and the follow-up's outcome), brainwire.capture.replays
// (repeated requests answered from their Idempotency-Key, by outcome and
// kind; no agent ran, so no version and no other capture metric counts
// them), brainwire.captures.active,
// brainwire.capture.confidence, brainwire.capture.time_to_outcome,
// brainwire.capture.reasoning_chunks, brainwire.upstream.errors (by
// error.type: HTTP status, timeout, connection, stream_broken, the run's
// last_error code; brainwire.upstream.error.source; and
// brainwire.upstream.error.retried: true for a failed attempt the retry
// layer sent again, which the capture never saw, so that the false ones
// are the errors that reached it; WrapCalls, above the retry layer, tells
// them apart), brainwire.upstream.retries (calls sent again, by
// gen_ai.operation.name and brainwire.upstream.retry.status), the semantic
// conventions' gen_ai.client.operation.duration (invoke_agent,
// execute_tool and each upstream operation) and gen_ai.client.token.usage,
// the Application Insights exporter's sent and dropped counts, and the
// span exporters' exported and dropped spans (see Lost spans).
//
// Prometheus counts a series' increase from the samples it has, so a
// series whose first sample already holds its first events (a rare
// outcome's first capture, an upstream error, an evaluation's whole run)
// would lose them. Every cumulative series therefore starts when it is
// first measured (the SDK's per-series start times, which Start turns
// on), and that start time reaches Prometheus as the series' created
// timestamp, where a 0 is stored (created-timestamp-zero-ingestion):
// counters and histograms count from their first event. Each process is
// an instance of its own (a random service.instance.id), so replicas,
// restarts and evaluations never share a series. Every series a new
// agent version can count is declared at zero when the version is first
// seen, so that dashboards show 0 instead of nothing. Histograms are
// recorded in the capture's context, so their exemplars carry its trace
// id.
//
// # Content
//
// Capture text (gen_ai.input.messages), reasoning text, tool arguments and
// results (gen_ai.tool.call.arguments, .result), the clarifying question
// and the Application Insights properties holding any of them are recorded
// only with Config.CaptureContent (BRAINWIRE_CAPTURE_CONTENT, default on).
// Off, every signal keeps its ids, indices and counts and loses the text.
//
// # Configuration
//
// SettingsFromEnv reads which signals are on and where they go (the
// OTLP endpoints, OTEL_{TRACES,METRICS}_EXPORTER, OTEL_SDK_DISABLED) and
// APPLICATIONINSIGHTS_CONNECTION_STRING, and checks the values the SDK
// would otherwise take without a word (the protocol, the sampler); Start
// builds what they ask for and nothing when they ask for nothing, and
// fails on OTEL_RESOURCE_ATTRIBUTES the SDK's reader cannot read.
// Everything else in OTEL_* (headers, compression, timeouts, TLS, the
// sampler itself, resource attributes, metric interval, span limits) the
// SDK reads itself, and reports what it cannot read through its logger
// (otel.SetLogger). No global OpenTelemetry state is set here: providers
// are passed explicitly, and the command sets the SDK's logger and error
// handler.
package telemetry
