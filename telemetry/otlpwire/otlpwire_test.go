package otlpwire_test

import (
	"bytes"
	"context"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/brainwire/brainwire/telemetry/otlpwire"
)

// collector keeps every export request it receives, decoded.
type collector struct {
	colltrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*colltrace.ExportTraceServiceRequest
}

func (c *collector) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	return &colltrace.ExportTraceServiceResponse{}, nil
}

// sdkRequest is the request the SDK's own OTLP exporter sends for spans:
// the oracle.
func sdkRequest(t *testing.T, spans []sdktrace.ReadOnlySpan) (*colltrace.ExportTraceServiceRequest, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpointURL("http://"+l.Addr().String()),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) != 1 {
		t.Fatalf("collector got %d requests, want 1", len(c.reqs))
	}
	return c.reqs[0], nil
}

// decode reads an encoded request as a collector would.
func decode(t *testing.T, b []byte) *colltrace.ExportTraceServiceRequest {
	t.Helper()
	var req colltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatalf("decoding the encoded request: %v", err)
	}
	return &req
}

// sortResources orders resource spans by their resource: the SDK's
// conversion groups them through a map.
func sortResources(req *colltrace.ExportTraceServiceRequest) {
	sort.Slice(req.ResourceSpans, func(i, j int) bool {
		return prototext.Format(req.ResourceSpans[i].Resource) < prototext.Format(req.ResourceSpans[j].Resource)
	})
}

// richSpans makes spans of every shape the SDK can: two resources, scopes
// with and without version, schema and attributes, every span kind,
// local and remote parents, trace state, links, events, statuses, every
// attribute type, and attributes, events and links dropped by limits.
func richSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	limits := sdktrace.NewSpanLimits()
	limits.AttributeCountLimit = 12
	limits.EventCountLimit = 4
	limits.LinkCountLimit = 2
	limits.AttributePerEventCountLimit = 14
	limits.AttributePerLinkCountLimit = 1
	res1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "brainwire"), attribute.Int("replica", 2))
	res2 := resource.NewSchemaless(attribute.String("service.name", "other"))
	tp1 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res1), sdktrace.WithRawSpanLimits(limits))
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res2))
	tracers := []trace.Tracer{
		tp1.Tracer("github.com/brainwire/brainwire/telemetry"),
		tp1.Tracer("scoped", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL("https://example.com/s"),
			trace.WithInstrumentationAttributes(attribute.Bool("scoped", true))),
		tp2.Tracer(""),
	}
	every := []attribute.KeyValue{
		attribute.Bool("b", true), attribute.Bool("b0", false),
		attribute.Int64("i", -42), attribute.Int64("i0", 0),
		attribute.Float64("f", 3.25), attribute.Float64("f0", 0),
		attribute.String("s", "héllo"), attribute.String("s0", ""),
		attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -2, 1 << 40}),
		attribute.Float64Slice("fs", []float64{0.5, -1e300}),
		attribute.StringSlice("ss", []string{"a", "", "c"}),
		{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1, 0xff})},
		{Key: "empty"},
		{Key: "slice", Value: attribute.SliceValue(attribute.StringValue("x"), attribute.IntValue(7), attribute.SliceValue(attribute.BoolValue(false)))},
		{Key: "map", Value: attribute.MapValue(attribute.String("k", "v"), attribute.Int("n", 1))},
	}
	tsRemote, _ := trace.ParseTraceState("vendor=value,other=x")
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, TraceState: tsRemote, Remote: true,
	})
	kinds := []trace.SpanKind{trace.SpanKindUnspecified, trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer}
	base := time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC)
	for i, tr := range tracers {
		ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
		ctx, root := tr.Start(ctx, "POST /api/capture", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(base),
			trace.WithAttributes(every...),
			trace.WithLinks(
				trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("l", "1"), attribute.String("l2", "dropped")}},
				trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}})},
				trace.Link{SpanContext: remote}))
		for j, k := range kinds {
			_, s := tr.Start(ctx, "child "+k.String(), trace.WithSpanKind(k), trace.WithTimestamp(base.Add(time.Duration(j)*time.Millisecond)))
			for e := 0; e <= j; e++ {
				s.AddEvent("reasoning.chunk", trace.WithTimestamp(base.Add(time.Duration(e)*time.Microsecond)), trace.WithAttributes(
					attribute.String("run_id", "run-1"), attribute.Int("chunk_index", e), attribute.String("reasoning_text", strings.Repeat("é", e*40))))
			}
			s.AddEvent("all attributes", trace.WithAttributes(every...))
			switch j % 3 {
			case 1:
				s.SetStatus(codes.Error, "upstream failed")
			case 2:
				s.SetStatus(codes.Ok, "")
			}
			s.End(trace.WithTimestamp(base.Add(time.Second)))
		}
		if i == 1 {
			root.End() // now
		} else {
			root.End(trace.WithTimestamp(base.Add(2 * time.Second)))
		}
	}
	// A long span: lengths of more than one byte at every level.
	_, long := tracers[0].Start(context.Background(), "invoke_agent Classifier")
	for e := range 4 {
		long.AddEvent("reasoning.chunk", trace.WithAttributes(attribute.String("reasoning_text", strings.Repeat("x", 70_000*e))))
	}
	long.End()
	return rec.Ended()
}

func TestEncodeMatchesTheSDKExporter(t *testing.T) {
	spans := richSpans(t)
	want, err := sdkRequest(t, spans)
	if err != nil {
		t.Fatal(err)
	}
	buf := otlpwire.AppendRequest(nil, spans)
	got := decode(t, buf)
	sortResources(want)
	sortResources(got)
	if !proto.Equal(got, want) {
		t.Errorf("encoded request differs from the SDK exporter's:\ngot  %s\nwant %s", prototext.Format(got), prototext.Format(want))
	}
	if n := len(got.ResourceSpans); n != 2 {
		t.Errorf("%d resource spans, want 2", n)
	}

	// A buffer used again: a second, different request is right too, and
	// so is the first again; and what dst held is kept.
	few := spans[:3]
	want2, err := sdkRequest(t, few)
	if err != nil {
		t.Fatal(err)
	}
	if got2 := decode(t, otlpwire.AppendRequest(buf[:0], few)); !proto.Equal(got2, want2) {
		t.Errorf("second request differs:\ngot  %s\nwant %s", prototext.Format(got2), prototext.Format(want2))
	}
	b3 := otlpwire.AppendRequest(append(buf[:0], "kept"...), spans)
	if string(b3[:4]) != "kept" {
		t.Errorf("dst's bytes were not kept: %q", b3[:4])
	}
	got3 := decode(t, b3[4:])
	sortResources(got3)
	if !proto.Equal(got3, want) {
		t.Error("third request (the first spans again) differs")
	}
}

// TestResourceSpansCarryTheEncoding: the request's resource_spans as
// generated messages marshal back to the very bytes written, and decode as
// the spans they were written from.
func TestResourceSpansCarryTheEncoding(t *testing.T) {
	spans := richSpans(t)
	b := otlpwire.AppendRequest(nil, spans)
	rs := otlpwire.ResourceSpans(nil, b)
	if len(rs) != 2 {
		t.Fatalf("%d resource spans, want 2 (two resources)", len(rs))
	}
	out, err := proto.Marshal(&colltrace.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) {
		t.Fatalf("marshalled back to %d bytes that differ from the %d written", len(out), len(b))
	}
	want, err := sdkRequest(t, spans)
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, out)
	sortResources(got)
	sortResources(want)
	if !proto.Equal(got, want) {
		t.Error("the carried request decodes other than the SDK exporter's")
	}
	if rs := otlpwire.ResourceSpans(nil, nil); len(rs) != 0 {
		t.Errorf("an empty request: %d resource spans", len(rs))
	}
	if rs := otlpwire.ResourceSpans(nil, []byte{0x12, 0x01, 0x00}); len(rs) != 0 {
		t.Errorf("a field other than resource_spans: %d resource spans", len(rs))
	}
}

func TestEncodeEmpty(t *testing.T) {
	if b := otlpwire.AppendRequest(nil, nil); len(b) != 0 {
		t.Errorf("no spans encoded as %x, want an empty request", b)
	}
	if b := otlpwire.AppendRequest(nil, []sdktrace.ReadOnlySpan{nil}); len(b) != 0 {
		t.Errorf("a nil span encoded as %x, want an empty request", b)
	}
}

// TestEncodeInvalidUTF8: a string protobuf cannot carry fails the SDK
// exporter's whole request; the encoder sends it with U+FFFD in place of
// the bad bytes, and the rest of the batch with it.
func TestEncodeInvalidUTF8(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, bad := tp.Tracer("t").Start(context.Background(), "bad \xff name", trace.WithAttributes(attribute.String("text", "cut mid-rune \xe2\x82")))
	bad.AddEvent("reasoning.chunk", trace.WithAttributes(attribute.String("reasoning_text", "\xc3(")))
	bad.End()
	_, good := tp.Tracer("t").Start(context.Background(), "good")
	good.End()
	spans := rec.Ended()

	_, err := sdkRequest(t, spans)
	t.Logf("the SDK exporter's own way: %v", err)
	buf := otlpwire.AppendRequest(nil, spans)
	got := decode(t, buf)
	ss := got.ResourceSpans[0].ScopeSpans[0].Spans
	if len(ss) != 2 {
		t.Fatalf("%d spans, want 2", len(ss))
	}
	if ss[0].Name != "bad \uFFFD name" || ss[1].Name != "good" {
		t.Errorf("names %q, %q", ss[0].Name, ss[1].Name)
	}
	if v := ss[0].Attributes[0].Value.GetStringValue(); v != "cut mid-rune \uFFFD" {
		t.Errorf("attribute %q", v)
	}
	if v := ss[0].Events[0].Attributes[0].Value.GetStringValue(); v != "\uFFFD(" {
		t.Errorf("event attribute %q", v)
	}
}

// FuzzEncode holds the encoder to protobuf's decoder for any strings and
// numbers a span can carry: the request decodes, and every value comes
// back as it went in (strings made valid UTF-8).
func FuzzEncode(f *testing.F) {
	f.Add("invoke_agent Classifier", "reasoning_text", " the capture", int64(3), 0.5, []byte{1})
	f.Add("", "", "", int64(-1), -0.0, []byte(nil))
	f.Add("\xff", "k\x00", strings.Repeat("é", 200), int64(1<<62), 1e308, bytes.Repeat([]byte{0xff}, 300))
	f.Fuzz(func(t *testing.T, name, key, text string, n int64, x float64, raw []byte) {
		if key == "" || key == "n" {
			key = "k" // the SDK drops attributes without a key, and keeps one of a key
		}
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: -1, AttributeCountLimit: -1, EventCountLimit: -1, LinkCountLimit: -1,
			AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1,
		}))
		_, s := tp.Tracer(name).Start(context.Background(), name, trace.WithAttributes(attribute.String(key, text), attribute.Int64("n", n)))
		s.AddEvent(text, trace.WithAttributes(attribute.Float64(key, x), attribute.KeyValue{Key: "raw", Value: attribute.ByteSliceValue(raw)},
			attribute.StringSlice("ss", []string{text, name})))
		s.End()
		ended := rec.Ended()
		req := decode(t, otlpwire.AppendRequest(nil, ended))
		valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		sp := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
		if sp.Name != valid(name) || req.ResourceSpans[0].ScopeSpans[0].GetScope().GetName() != valid(ended[0].InstrumentationScope().Name) {
			t.Fatalf("name %q", sp.Name)
		}
		if !utf8.ValidString(sp.Name) {
			t.Fatal("invalid UTF-8 sent")
		}
		attrs := map[string]any{}
		for _, kv := range sp.Attributes {
			attrs[kv.Key] = kv.Value
		}
		if len(sp.Attributes) != 2 || sp.Attributes[0].Key != valid(key) || sp.Attributes[0].Value.GetStringValue() != valid(text) ||
			sp.Attributes[1].Value.GetIntValue() != n {
			t.Fatalf("span attributes %v", sp.Attributes)
		}
		ev := sp.Events[0]
		if ev.Name != valid(text) || len(ev.Attributes) != 3 {
			t.Fatalf("event %v", ev)
		}
		if got := ev.Attributes[0].Value.GetDoubleValue(); got != x && !(got != got && x != x) {
			t.Fatalf("double %v, want %v", got, x)
		}
		if got := ev.Attributes[1].Value.GetBytesValue(); !bytes.Equal(got, raw) {
			t.Fatalf("bytes %x, want %x", got, raw)
		}
		if vs := ev.Attributes[2].Value.GetArrayValue().GetValues(); len(vs) != 2 || vs[0].GetStringValue() != valid(text) || vs[1].GetStringValue() != valid(name) {
			t.Fatalf("string slice %v", vs)
		}
	})
}
