package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

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

// errorList collects the errors a otlpExporter reports.
type errorList struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorList) handle(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorList) take() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := l.errs
	l.errs = nil
	return errs
}

func testOTLPExporter(t *testing.T, endpoint string, opts ...otlptracegrpc.Option) (*otlpExporter, *errorList) {
	t.Helper()
	exp, err := newOTLPExporter(context.Background(), endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	errs := &errorList{}
	exp.handle = errs.handle
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp, errs
}

// exportAll exports spans n times and waits for the answers, which must
// all be successes.
func exportAll(t *testing.T, exp *otlpExporter, errs *errorList, spans []sdktrace.ReadOnlySpan, n int) {
	t.Helper()
	for range n {
		if err := exp.ExportSpans(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
	}
	if err := exp.wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e := errs.take(); len(e) > 0 {
		t.Fatalf("export errors: %v", e)
	}
}

func TestOTLPExporterSendsEverySpanOnce(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			r := telemetrytest.NewReceiver(t)
			exp, errs := testOTLPExporter(t, r.Endpoint(), otlptracegrpc.WithCompressor(compression))
			spans := chunkSpans(5, 300)
			const requests = 3 * otlpInFlight // buffers given back and used again
			exportAll(t, exp, errs, spans, requests)
			if n := len(r.Spans()); n != requests*len(spans) {
				t.Fatalf("receiver got %d spans, want %d", n, requests*len(spans))
			}
			for key, n := range receivedChunks(t, r) {
				if want := requests * 300; n != want {
					t.Errorf("%s: %d chunk events, want %d", key, n, want)
				}
			}
		})
	}
}

// TestOTLPExporterReusesBuffers: a request's buffer is free for the next
// once the request is answered.
func TestOTLPExporterReusesBuffers(t *testing.T) {
	r := telemetrytest.NewDiscardingReceiver(t)
	exp, errs := testOTLPExporter(t, r.Endpoint())
	spans := chunkSpans(20, 100)
	for range 10 {
		exportAll(t, exp, errs, spans, 1)
		if len(exp.free) != 1 {
			t.Fatalf("%d buffers free after a request, want 1", len(exp.free))
		}
	}
}

// TestOTLPExporterFailure: a failed export is reported to the error
// handler, and the next one arrives whole.
func TestOTLPExporterFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens: the first export fails
	exp, errs := testOTLPExporter(t, "http://"+addr,
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}), otlptracegrpc.WithTimeout(2*time.Second))
	var mu sync.Mutex
	var sent, failed int
	exp.outcome = func(spans int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed += spans
		} else {
			sent += spans
		}
	}
	spans := chunkSpans(2, 50)
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("ExportSpans: %v (failures are reported to the handler)", err)
	}
	if err := exp.wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e := errs.take(); len(e) != 1 {
		t.Fatalf("errors reported for an export to a closed port: %v, want one", e)
	}
	mu.Lock()
	if sent != 0 || failed != len(spans) {
		t.Errorf("outcome: %d spans sent, %d failed; want %d failed", sent, failed, len(spans))
	}
	failed = 0
	mu.Unlock()
	r := telemetrytest.NewReceiverAt(t, addr)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := exp.ExportSpans(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
		if err := exp.wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(errs.take()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("exports still fail after the receiver started")
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
	mu.Lock()
	defer mu.Unlock()
	if sent != len(spans) {
		t.Errorf("outcome: %d spans sent, want %d", sent, len(spans))
	}
}

// TestOTLPExporterBoundsRequestsInFlight: with otlpInFlight requests
// unanswered, ExportSpans waits (and gives up with its context); Shutdown
// waits for them.
func TestOTLPExporterBoundsRequestsInFlight(t *testing.T) {
	hold := make(chan struct{})
	var got sync.WaitGroup
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(srv, heldTraceService{hold: hold, got: &got})
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	exp, errs := testOTLPExporter(t, "http://"+l.Addr().String())
	spans := chunkSpans(1, 5)
	got.Add(otlpInFlight)
	for range otlpInFlight {
		if err := exp.ExportSpans(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
	}
	got.Wait() // every request has reached the collector, which holds them
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := exp.ExportSpans(ctx, spans); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("export beyond the requests in flight: %v, want it to wait until its context ends", err)
	}
	shut := make(chan error, 1)
	go func() { shut <- exp.Shutdown(context.Background()) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with requests unanswered", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(hold)
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if e := errs.take(); len(e) > 0 {
		t.Errorf("export errors: %v", e)
	}
}

// heldTraceService answers each export once hold is closed.
type heldTraceService struct {
	colltrace.UnimplementedTraceServiceServer
	hold chan struct{}
	got  *sync.WaitGroup
}

func (s heldTraceService) Export(ctx context.Context, _ *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	s.got.Done()
	select {
	case <-s.hold:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &colltrace.ExportTraceServiceResponse{}, nil
}

// TestBurstOfEndingSpansIsKept: thousands of captures ending at once end
// tens of thousands of spans; while the collector is behind, they wait in
// the queue instead of being dropped (the SDK drops them silently when it
// is full).
func TestBurstOfEndingSpansIsKept(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint(), "OTEL_METRICS_EXPORTER": "none"}
	settings, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tel, err := Start(t.Context(), settings, Options{Agent: Agent{Name: "Classifier"}})
	if err != nil {
		t.Fatal(err)
	}
	r.Hold()
	const spans = 40_000 // a dozen spans each for 3,300 captures
	tracer := tel.TracerProvider().Tracer("burst")
	for range spans {
		_, s := tracer.Start(t.Context(), "span")
		s.End()
	}
	r.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(r.Spans()); got != spans {
		t.Errorf("the collector got %d of %d spans", got, spans)
	}
}
