package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func (ce *ChunkEvents) openSpans() int {
	ce.mu.Lock()
	defer ce.mu.Unlock()
	return len(ce.open)
}

// TestChunkEventsLetGoOfSpans: a span's chunks are let go of when it
// ends, or when the provider shuts down with the span still open; a chunk
// that comes after the end is dropped, even while the end is under way.
func TestChunkEventsLetGoOfSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	ce := NewChunkEvents(rec)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ce))
	tracer := tp.Tracer("test")

	_, plain := tracer.Start(context.Background(), "plain")
	_, withChunks := tracer.Start(context.Background(), "with chunks")
	l := ce.spanChunks(withChunks.SpanContext(), true)
	for i := range 3 {
		l.add(time.Now(), i, "t", "run", "up_run", "up_thread")
	}
	// Chunks still arriving from another goroutine while the span ends
	// (which a capture never does) must not race with the export.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 3; i < 1000; i++ {
			l.add(time.Now(), i, "t", "run", "up_run", "up_thread")
		}
	})
	withChunks.End()
	plain.End()
	wg.Wait()
	if n := ce.openSpans(); n != 0 {
		t.Errorf("%d spans still held after they ended", n)
	}
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want 2", len(ended))
	}
	cs, ok := ended[0].(*chunkSpan)
	if !ok {
		t.Fatalf("the span with chunks went on as %T", ended[0])
	}
	if _, ok := ended[1].(*chunkSpan); ok {
		t.Error("a span without chunks was wrapped")
	}
	n := len(cs.Events())
	if n < 3 || n != cs.EventCount() {
		t.Errorf("%d events (EventCount %d), want the 3 chunks added before the end and any that made it", n, cs.EventCount())
	}
	l.add(time.Now(), 1000, "late", "run", "up_run", "up_thread")
	if got := len(cs.Events()); got != n {
		t.Errorf("a chunk after the end changed the ended span: %d events, then %d", n, got)
	}

	_, open := tracer.Start(context.Background(), "open at shutdown")
	ce.spanChunks(open.SpanContext(), false).add(time.Now(), 0, "t", "run", "", "")
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := ce.openSpans(); n != 0 {
		t.Errorf("%d spans still held after shutdown", n)
	}
}
