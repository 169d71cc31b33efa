package telemetry

import (
	"context"
	"errors"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
