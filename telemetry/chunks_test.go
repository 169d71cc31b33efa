package telemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/otlpwire"
)

// runCapture records a capture of n reasoning chunks on tel: the agent
// service's run changes halfway, and the outcome comes between two chunks.
func runCapture(tel *telemetry.Telemetry, n int) {
	_, obs := tel.StartCapture(context.Background(), brainwire.Capture{RunID: "run-1", ThreadID: "th-1", Kind: brainwire.KindText, Text: "call Sam"})
	upRun := "run_a"
	for i := range n {
		if i == n/2 {
			upRun = "run_b"
		}
		if i == n-2 {
			obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureOutcome,
				Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "People"}})
		}
		obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{
			RunID: "run-1", Index: i, Text: fmt.Sprintf("thought %d ", i), UpstreamRunID: upRun, UpstreamThreadID: "thread_x"}})
	}
	obs.End(brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, ReasoningChunks: n})
}

// chunkTelemetry is telemetry whose provider's spans end through
// ChunkEvents into a recorder, as Start wires them.
func chunkTelemetry(t *testing.T, content bool) (*telemetry.Telemetry, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	ce := telemetry.NewChunkEvents(rec)
	tel, err := telemetry.New(telemetry.Config{CaptureContent: content, Agent: telemetry.Agent{Name: "Classifier"}, ChunkEvents: ce,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ce), sdktrace.WithRawSpanLimits(telemetry.SpanLimits()))})
	if err != nil {
		t.Fatal(err)
	}
	return tel, rec
}

// agentSpan is the invoke_agent span among the ended ones.
func agentSpan(t *testing.T, spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == "invoke_agent Classifier" {
			return s
		}
	}
	t.Fatalf("no invoke_agent span among %d", len(spans))
	return nil
}

type eventShape struct {
	name  string
	attrs []attribute.KeyValue
}

func shapes(events []sdktrace.Event) []eventShape {
	out := make([]eventShape, len(events))
	for i, ev := range events {
		out[i] = eventShape{ev.Name, ev.Attributes}
	}
	return out
}

// TestChunkEventsAreTheSDKEvents: a span's chunks kept by ChunkEvents
// come out as the very events the SDK would have kept (names, attributes,
// order, the outcome event in its place, more than the SDK's default
// limit of 128), with content capture on and off.
func TestChunkEventsAreTheSDKEvents(t *testing.T) {
	for _, content := range []bool{true, false} {
		t.Run(fmt.Sprintf("content=%v", content), func(t *testing.T) {
			const n = 300
			sdkRec := tracetest.NewSpanRecorder()
			sdkTel, err := telemetry.New(telemetry.Config{CaptureContent: content, Agent: telemetry.Agent{Name: "Classifier"},
				TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdkRec), sdktrace.WithRawSpanLimits(telemetry.SpanLimits()))})
			if err != nil {
				t.Fatal(err)
			}
			runCapture(sdkTel, n)

			tel, rec := chunkTelemetry(t, content)
			runCapture(tel, n)

			want := agentSpan(t, sdkRec.Ended()).Events()
			got := agentSpan(t, rec.Ended()).Events()
			if len(want) != n+1 {
				t.Fatalf("the SDK kept %d events, want %d", len(want), n+1)
			}
			if !slices.EqualFunc(shapes(got), shapes(want), func(a, b eventShape) bool {
				return a.name == b.name && slices.Equal(a.attrs, b.attrs)
			}) {
				t.Errorf("events differ from the SDK's:\n got %v\nwant %v", shapes(got)[n-3:], shapes(want)[n-3:])
			}
			for i := 1; i < len(got); i++ {
				if got[i].Time.Before(got[i-1].Time) {
					t.Fatalf("event %d (%s) is earlier than the one before it", i, got[i].Name)
				}
			}
			if ev := got[n-2]; ev.Name != telemetry.EventOutcome {
				t.Errorf("event %d is %s, want the outcome between chunks %d and %d", n-2, ev.Name, n-3, n-2)
			}
		})
	}
}

// TestChunkEventsEncodeAsTheirEvents: otlpwire, which ranges over the
// chunks without building events, writes the same request as from the
// events built.
func TestChunkEventsEncodeAsTheirEvents(t *testing.T) {
	tel, rec := chunkTelemetry(t, true)
	runCapture(tel, 60)
	s := agentSpan(t, rec.Ended())
	if _, ok := s.(otlpwire.EventSeq); !ok {
		t.Fatalf("the span (%T) does not range over its chunks", s)
	}
	built := tracetest.SpanStubFromReadOnlySpan(s).Snapshot()
	if _, ok := built.(otlpwire.EventSeq); ok {
		t.Fatal("the stub ranges over events too; the test compares nothing")
	}
	got, want := otlpwire.AppendRequest(nil, []sdktrace.ReadOnlySpan{s}), otlpwire.AppendRequest(nil, []sdktrace.ReadOnlySpan{built})
	if !bytes.Equal(got, want) {
		t.Errorf("request from the chunks (%d bytes) differs from the one from their events (%d bytes)", len(got), len(want))
	}
	if len(built.Events()) != 61 {
		t.Errorf("%d events, want 61", len(built.Events()))
	}
}
