package telemetry

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ChunkEvents is a span processor that keeps the reasoning chunks of
// invoke_agent spans until the span ends, and hands them on with the span,
// as its reasoning.chunk events, to the processors it wraps.
//
// The SDK keeps a span event as an Event and a copy of its attributes:
// some 400 bytes for a chunk's five, held until the span ends, and five
// strings for the garbage collector to mark on every cycle. With
// thousands of runs streaming at once that was the largest part of a
// stream's memory with telemetry on. A chunk kept here is its time, index
// and text, 40 bytes and one string; the ids every chunk of a run shares
// are kept once. The events reach the exporters exactly as the SDK's
// would (same name, attributes and order; see chunkSpan), and as the SDK
// does with Start's span limits, none is ever dropped.
//
// Wrap the processors that export (NewChunkEvents), register the result
// with the tracer provider, and give it to New as Config.ChunkEvents.
// Start does all three. Safe for concurrent use.
type ChunkEvents struct {
	next []sdktrace.SpanProcessor

	mu   sync.Mutex
	open map[spanKey]*chunkList // spans with chunks, until they end
}

var _ sdktrace.SpanProcessor = (*ChunkEvents)(nil)

type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

// NewChunkEvents wraps the processors that the spans, with their chunks,
// go on to.
func NewChunkEvents(next ...sdktrace.SpanProcessor) *ChunkEvents {
	return &ChunkEvents{next: next, open: make(map[spanKey]*chunkList)}
}

// spanChunks starts keeping the chunks of a recording span. withText says
// whether each chunk carries its text (content capture on).
func (ce *ChunkEvents) spanChunks(sc trace.SpanContext, withText bool) *chunkList {
	l := &chunkList{withText: withText}
	ce.mu.Lock()
	ce.open[spanKey{sc.TraceID(), sc.SpanID()}] = l
	ce.mu.Unlock()
	return l
}

// OnStart implements sdktrace.SpanProcessor.
func (ce *ChunkEvents) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	for _, p := range ce.next {
		p.OnStart(ctx, s)
	}
}

// OnEnd implements sdktrace.SpanProcessor: a span with chunks goes on
// with them as its events.
func (ce *ChunkEvents) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	k := spanKey{sc.TraceID(), sc.SpanID()}
	ce.mu.Lock()
	l, ok := ce.open[k]
	delete(ce.open, k)
	ce.mu.Unlock()
	if ok {
		if chunks := l.end(); len(chunks) > 0 {
			s = &chunkSpan{ReadOnlySpan: s, chunks: chunks, withText: l.withText}
		}
	}
	for _, p := range ce.next {
		p.OnEnd(s)
	}
}

// Shutdown implements sdktrace.SpanProcessor. Spans still open are not
// exported any more (the provider no longer calls OnEnd), so their chunks
// are let go.
func (ce *ChunkEvents) Shutdown(ctx context.Context) error {
	ce.mu.Lock()
	clear(ce.open)
	ce.mu.Unlock()
	errs := make([]error, len(ce.next))
	for i, p := range ce.next {
		errs[i] = p.Shutdown(ctx)
	}
	return errors.Join(errs...)
}

// ForceFlush implements sdktrace.SpanProcessor.
func (ce *ChunkEvents) ForceFlush(ctx context.Context) error {
	errs := make([]error, len(ce.next))
	for i, p := range ce.next {
		errs[i] = p.ForceFlush(ctx)
	}
	return errors.Join(errs...)
}

// chunkList is one span's chunks. The capture adds them; OnEnd closes the
// list, after which it never changes (a chunk after the end is dropped, as
// the SDK drops an event added to an ended span).
type chunkList struct {
	withText bool

	mu     sync.Mutex
	ended  bool
	chunks []chunk
}

// chunk is one reasoning chunk: at is its time in Unix nanoseconds.
type chunk struct {
	at    int64
	index int
	text  string
	ids   *chunkIDs
}

// chunkIDs are the ids a run's chunks share: the capture's run id and the
// agent service's run and thread ids.
type chunkIDs struct {
	run, upstreamRun, upstreamThread string
}

func (l *chunkList) add(at time.Time, index int, text, run, upstreamRun, upstreamThread string) {
	if !l.withText {
		text = ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	var ids *chunkIDs // the last chunk's, while they stay the same
	if n := len(l.chunks); n > 0 {
		ids = l.chunks[n-1].ids
	}
	if ids == nil || ids.run != run || ids.upstreamRun != upstreamRun || ids.upstreamThread != upstreamThread {
		ids = &chunkIDs{run: run, upstreamRun: upstreamRun, upstreamThread: upstreamThread}
	}
	l.chunks = append(l.chunks, chunk{at: at.UnixNano(), index: index, text: text, ids: ids})
}

// end closes the list and returns its chunks, which no longer change.
func (l *chunkList) end() []chunk {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	return l.chunks
}

// chunkSpan is an ended span with its reasoning chunks: the SDK's events
// and the chunks' events, merged in time order (each already is; an event
// comes before a chunk of the same time).
type chunkSpan struct {
	sdktrace.ReadOnlySpan
	chunks   []chunk
	withText bool
}

// Events returns every event of the span, chunks included. It builds
// them anew on each call; exporters that encode with otlpwire range over
// AllEvents instead, which builds nothing.
func (s *chunkSpan) Events() []sdktrace.Event {
	out := make([]sdktrace.Event, 0, s.EventCount())
	attrs := make([]attribute.KeyValue, 0, chunkAttrCount(s.withText)*len(s.chunks))
	s.merge(func(ev sdktrace.Event, isChunk bool) bool {
		if isChunk {
			// Yielded attributes are reused: keep a copy.
			start := len(attrs)
			attrs = append(attrs, ev.Attributes...)
			ev.Attributes = attrs[start:len(attrs):len(attrs)]
		}
		out = append(out, ev)
		return true
	})
	return out
}

// EventCount is the number of the span's events, chunks included.
func (s *chunkSpan) EventCount() int { return len(s.ReadOnlySpan.Events()) + len(s.chunks) }

// AllEvents yields every event of the span in order. The attributes of a
// chunk's event are valid only until yield returns.
func (s *chunkSpan) AllEvents() iter.Seq[sdktrace.Event] {
	return func(yield func(sdktrace.Event) bool) {
		s.merge(func(ev sdktrace.Event, _ bool) bool { return yield(ev) })
	}
}

// merge yields the SDK's events and the chunks' in time order, saying
// which are chunks; a chunk's attributes are reused for the next.
func (s *chunkSpan) merge(yield func(ev sdktrace.Event, isChunk bool) bool) {
	events := s.ReadOnlySpan.Events()
	var kv [5]attribute.KeyValue
	n := chunkAttrCount(s.withText)
	i := 0
	for _, c := range s.chunks {
		for ; i < len(events) && events[i].Time.UnixNano() <= c.at; i++ {
			if !yield(events[i], false) {
				return
			}
		}
		kv[0] = AttrRunID.String(c.ids.run)
		kv[1] = AttrChunkIndex.Int(c.index)
		kv[2] = AttrFoundryRunID.String(c.ids.upstreamRun)
		kv[3] = AttrFoundryThreadID.String(c.ids.upstreamThread)
		kv[4] = AttrReasoningText.String(c.text)
		if !yield(sdktrace.Event{Name: EventReasoningChunk, Attributes: kv[:n], Time: time.Unix(0, c.at)}, true) {
			return
		}
	}
	for ; i < len(events); i++ {
		if !yield(events[i], false) {
			return
		}
	}
}

// chunkAttrCount is the number of attributes of a chunk's event: the text
// is the last, and only with content capture on.
func chunkAttrCount(withText bool) int {
	if withText {
		return 5
	}
	return 4
}

// eventCount is the number of a span's events, without building a
// chunkSpan's.
func eventCount(s sdktrace.ReadOnlySpan) int {
	if cs, ok := s.(*chunkSpan); ok {
		return cs.EventCount()
	}
	return len(s.Events())
}
