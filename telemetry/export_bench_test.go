package telemetry

import (
	"context"
	"fmt"
	"testing"

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
// the store write.
func captureTraces(n int) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(SpanLimits()))
	tr := tp.Tracer(ScopeName)
	for i := range n {
		runID := fmt.Sprintf("run-%08d-f56b-4014-b6ff-8fd83c256ca2", i)
		ctx, root := tr.Start(context.Background(), "POST /api/capture", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", "POST"), attribute.String("url.path", "/api/capture"), attribute.Int("http.response.status_code", 200)))
		ctx, agent := tr.Start(ctx, "invoke_agent Classifier", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.provider.name", "azure.ai.agents"),
				AttrRunID.String(runID), attribute.String("gen_ai.conversation.id", "thread_abc123def456ghi789")))
		for j := range 53 {
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
// nothing). "sdk" is the OTLP exporter converting and marshalling the
// spans itself; "wire" is what the server does, otlpwire's encoding sent
// through the same exporter.
func BenchmarkSpanExport(b *testing.B) {
	const captures = 100
	spans := captureTraces(captures)
	r := telemetrytest.NewDiscardingReceiver(b)
	sdk, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpointURL(r.Endpoint()))
	if err != nil {
		b.Fatal(err)
	}
	wire, err := newWireExporter(context.Background(), r.Endpoint())
	if err != nil {
		b.Fatal(err)
	}
	wire.handle = func(err error) { b.Error(err) }
	for _, exp := range []struct {
		name string
		sdktrace.SpanExporter
	}{{"sdk", sdk}, {"wire", wire}} {
		b.Run(exp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := exp.ExportSpans(context.Background(), spans); err != nil {
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
		_ = exp.Shutdown(context.Background())
	}
}
