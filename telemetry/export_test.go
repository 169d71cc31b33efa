package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// countingExporter records how many events each request carried.
type countingExporter struct {
	requests [][]int
	fail     int // the request (1-based) that fails
}

func (e *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	var events []int
	for _, s := range spans {
		events = append(events, len(s.Events()))
	}
	e.requests = append(e.requests, events)
	if len(e.requests) == e.fail {
		return errors.New("collector unavailable")
	}
	return nil
}

func (*countingExporter) Shutdown(context.Context) error { return nil }

func spansWithEvents(counts ...int) []sdktrace.ReadOnlySpan {
	stubs := make(tracetest.SpanStubs, len(counts))
	for i, n := range counts {
		stubs[i].Name = "span"
		stubs[i].Events = make([]sdktrace.Event, n)
	}
	return stubs.Snapshots()
}

func TestExportRequestsAreBoundedByEvents(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   [][]int
	}{
		{[]int{3, 3, 5, 1}, [][]int{{3, 3}, {5, 1}}},
		{[]int{0, 0, 6, 0, 0}, [][]int{{0, 0, 6, 0, 0}}},
		{[]int{2, 10, 2}, [][]int{{2}, {10}, {2}}}, // a long run's span goes alone
		{[]int{10}, [][]int{{10}}},
		{nil, nil},
	} {
		next := &countingExporter{}
		if err := (eventBoundedExporter{next, 6}).ExportSpans(context.Background(), spansWithEvents(tc.counts...)); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(next.requests, tc.want, slices.Equal) {
			t.Errorf("%v: requests %v, want %v", tc.counts, next.requests, tc.want)
		}
	}
	// A failed request does not stop the others; its error is returned.
	next := &countingExporter{fail: 1}
	err := (eventBoundedExporter{next, 6}).ExportSpans(context.Background(), spansWithEvents(5, 5, 5))
	if err == nil || len(next.requests) != 3 {
		t.Errorf("error %v after %d requests", err, len(next.requests))
	}
}

// chunkSpans are n invoke_agent-like spans of events chunks each.
func chunkSpans(n, events int) []sdktrace.ReadOnlySpan {
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		stubs[i].Name = "invoke_agent Classifier"
		stubs[i].SpanContext = trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(i + 1)}, SpanID: trace.SpanID{byte(i + 1)}})
		for j := range events {
			stubs[i].Events = append(stubs[i].Events, sdktrace.Event{Name: EventReasoningChunk,
				Attributes: []attribute.KeyValue{AttrChunkIndex.Int(j), AttrReasoningText.String(fmt.Sprintf("chunk %d of %d", j, i))}})
		}
	}
	return stubs.Snapshots()
}

// receivedChunks counts, per span name and trace, the chunk events a
// receiver got, and checks their order.
func receivedChunks(t *testing.T, r *telemetrytest.Receiver) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, s := range r.Spans() {
		key := fmt.Sprintf("%s %x", s.Name, s.TraceId)
		for j, ev := range s.Events {
			if idx := telemetrytest.Attr(ev.Attributes, "chunk_index"); idx != int64(j) {
				t.Errorf("%s: event %d has chunk_index %v", key, j, idx)
			}
		}
		got[key] += len(s.Events)
	}
	return got
}

func TestWireExporterSendsEverySpanOnce(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			r := telemetrytest.NewReceiver(t)
			exp, err := newWireExporter(context.Background(), r.Endpoint(), otlptracegrpc.WithCompressor(compression))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = exp.Shutdown(context.Background()) }()
			spans := chunkSpans(5, 300)
			spans = append(spans, chunkSpans(1, 0)...) // the one the exporter is given
			for range 2 {                              // the encoder's buffer, reused
				if err := exp.ExportSpans(context.Background(), spans); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(r.Spans()); n != 2*len(spans) {
				t.Fatalf("receiver got %d spans, want %d", n, 2*len(spans))
			}
			for key, n := range receivedChunks(t, r) {
				if want := 2 * 300; n != want && n != 0 {
					t.Errorf("%s: %d chunk events, want %d", key, n, want)
				}
			}
		})
	}
}

// TestWireExporterWithoutInterceptor: should the encoded request not reach
// gRPC through the interceptor, the batch goes the exporter's own way
// (the span given first goes twice) and nothing is lost.
func TestWireExporterWithoutInterceptor(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	plain, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpointURL(r.Endpoint()))
	if err != nil {
		t.Fatal(err)
	}
	exp := &wireExporter{otlp: plain}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	spans := chunkSpans(3, 10)
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Spans()); n != len(spans)+1 {
		t.Errorf("receiver got %d spans, want %d (the batch and the span given first)", n, len(spans)+1)
	}
	for key, n := range receivedChunks(t, r) {
		if n%10 != 0 || n == 0 {
			t.Errorf("%s: %d chunk events", key, n)
		}
	}
}

// TestWireExporterFailure: a failed export is reported, and the next one,
// with a buffer of its own, arrives whole.
func TestWireExporterFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens: the first export fails
	exp, err := newWireExporter(context.Background(), "http://"+addr,
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}), otlptracegrpc.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	spans := chunkSpans(2, 50)
	if err := exp.ExportSpans(context.Background(), spans); err == nil {
		t.Fatal("export to a closed port succeeded")
	}
	r := telemetrytest.NewReceiverAt(t, addr)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := exp.ExportSpans(context.Background(), spans)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("export after the receiver started: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(r.Spans()); n != len(spans) {
		t.Errorf("receiver got %d spans, want %d", n, len(spans))
	}
	for key, n := range receivedChunks(t, r) {
		if n != 50 {
			t.Errorf("%s: %d chunk events, want 50", key, n)
		}
	}
}
