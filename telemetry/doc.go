// Package telemetry records captures for the person tuning the agent:
// OpenTelemetry traces and metrics over OTLP/gRPC, with the GenAI
// conventions of go.opentelemetry.io/otel/semconv/v1.41.0, and Application
// Insights items. Nothing waits on a backend: a slow or unreachable
// collector or ingestion endpoint costs captures nothing but the telemetry.
// docs/telemetry.md says what is recorded and how it is configured.
//
// One trace per capture:
//
//	POST /api/capture                    server span (Middleware, otelhttp); an incoming traceparent is continued
//	└─ invoke_agent Classifier           the agent run (Telemetry as a brainwire.Observer)
//	   ├─ process_thread_run             one client span per call to the agent service (WrapTransport)
//	   ├─ execute_tool file_capture      one per tool call (WrapTools)
//	   │  └─ store.file                  store operations (WrapStore)
//	   └─ submit_tool_outputs
//
// Every chunk of the agent's reasoning becomes a reasoning.chunk event on
// invoke_agent, stamped with the time it came (it is held compactly until
// the span ends, as heldChunk says), and, as it comes, an Application
// Insights trace item "Reasoning chunk" in the trace's operation. The SDK
// keeps 128 events per span by default and drops the oldest; Start's
// provider keeps them all (SpanLimits), and a provider given to New must
// too. Ended spans go through the SDK's batch processor and otlptracegrpc
// exporter, in requests of at most 1,024 events, under a collector's
// default 4 MiB; spans lost on the way are counted in
// brainwire.telemetry.spans.dropped and logged (spans.go).
//
// A person's recategorization, and a follow-up answering a misunderstood
// capture, are evaluations of the run that filed the item: a span
// "evaluation ..." linked to the run's invoke_agent span, an Application
// Insights event in the run's operation, and brainwire.corrections or
// brainwire.follow_ups. No global OpenTelemetry state is set here.
package telemetry
