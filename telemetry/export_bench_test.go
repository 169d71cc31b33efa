package telemetry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// captureTraces are the spans of n captures as the server ends them: the
// HTTP server span, invoke_agent with 53 reasoning chunks (five attributes
// each, as the contract has them), two upstream calls, the tool call and
// the store write. The chunks are kept by ChunkEvents, as Start's provider
// keeps them, or with sdkEvents as SDK span events.
func captureTraces(n int, sdkEvents bool) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	ce := NewChunkEvents(rec)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ce), sdktrace.WithRawSpanLimits(SpanLimits()))
	tr := tp.Tracer(ScopeName)
	for i := range n {
		runID := fmt.Sprintf("run-%08d-f56b-4014-b6ff-8fd83c256ca2", i)
		ctx, root := tr.Start(context.Background(), "POST /api/capture", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", "POST"), attribute.String("url.path", "/api/capture"), attribute.Int("http.response.status_code", 200)))
		ctx, agent := tr.Start(ctx, "invoke_agent Classifier", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.provider.name", "azure.ai.agents"),
				AttrRunID.String(runID), attribute.String("gen_ai.conversation.id", "thread_abc123def456ghi789")))
		var chunks *chunkList
		if !sdkEvents {
			chunks = ce.spanChunks(agent.SpanContext(), true)
		}
		for j := range 53 {
			if chunks != nil {
				chunks.add(time.Now(), j, " the capture mentions", runID, "run_abc123def456ghi789", "thread_abc123def456ghi789")
				continue
			}
			agent.AddEvent(EventReasoningChunk, trace.WithAttributes(
				AttrRunID.String(runID), AttrChunkIndex.Int(j),
				AttrFoundryRunID.String("run_abc123def456ghi789"), AttrFoundryThreadID.String("thread_abc123def456ghi789"),
				AttrReasoningText.String(" the capture mentions"),
			))
		}
		for _, name := range []string{"create_thread_and_run", "submit_tool_outputs", "execute_tool file_capture", "store.file"} {
			_, s := tr.Start(ctx, name, trace.WithAttributes(attribute.String("http.request.method", "POST"), attribute.Int("http.response.status_code", 200)))
			s.End()
		}
		agent.End()
		root.End()
	}
	return rec.Ended()
}

// BenchmarkSpanExport is the span exporter's work per reasoning chunk,
// amortizing each capture's other spans: 100 captures' spans exported in
// one request over a real gRPC connection to a receiver that accepts
// without decoding (a collector in another process costs the server
// nothing). "sdk" is the SDK's OTLP exporter converting and marshalling
// the spans itself; "wire" is Start's exporter, otlpwire's encoding sent
// through the SDK's OTLP client; "wire_chunks" is what the server does,
// the same with the chunks kept by ChunkEvents.
func BenchmarkSpanExport(b *testing.B) {
	const captures = 100
	spans := captureTraces(captures, true)
	chunked := captureTraces(captures, false)
	r := telemetrytest.NewDiscardingReceiver(b)
	sdk, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpointURL(r.Endpoint()))
	if err != nil {
		b.Fatal(err)
	}
	wire, err := newOTLPExporter(context.Background(), r.Endpoint())
	if err != nil {
		b.Fatal(err)
	}
	wire.handle = func(err error) { b.Error(err) }
	for _, exp := range []struct {
		name string
		sdktrace.SpanExporter
		spans []sdktrace.ReadOnlySpan
	}{{"sdk", sdk, spans}, {"wire", wire, spans}, {"wire_chunks", wire, chunked}} {
		b.Run(exp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := exp.ExportSpans(context.Background(), exp.spans); err != nil {
					b.Fatal(err)
				}
				// One request at a time, answered, as the other's.
				if err := wire.wait(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*captures*53), "ns/chunk")
			b.ReportMetric(0, "ns/op")
		})
	}
	_ = sdk.Shutdown(context.Background())
	_ = wire.Shutdown(context.Background())
}
