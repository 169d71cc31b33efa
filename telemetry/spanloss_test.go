package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/brainwire/brainwire/internal/syncbuf"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// logLines is a JSON log kept for a test to read.
type logLines struct{ b syncbuf.Buffer }

func (l *logLines) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(&l.b, nil)) }

// lossLines are the warnings of dropped spans logged so far.
func (l *logLines) lossLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.b.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if msg, _ := line["msg"].(string); line["level"] == "WARN" && strings.Contains(msg, "spans dropped") {
			out = append(out, line)
		}
	}
	return out
}

// smallQueue is a span pipeline a test overflows in a moment.
var smallQueue = spanTuning{
	queue:         64,
	batch:         8,
	batchTimeout:  10 * time.Millisecond,
	exportTimeout: time.Minute,
	lossDelay:     20 * time.Millisecond,
	lossEvery:     time.Hour,
}

// startToReceiver starts telemetry sending traces and metrics to r.
func startToReceiver(t *testing.T, r *telemetrytest.Receiver, tuning spanTuning, log *slog.Logger) (*Telemetry, *spanPipeline) {
	t.Helper()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint()}
	settings, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tel, err := start(t.Context(), settings, Options{Agent: Agent{Name: "Classifier"}, Logger: log}, tuning)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(ctx)
	})
	if len(tel.chunks.next) != 1 {
		t.Fatalf("%d span pipelines, want the OTLP one", len(tel.chunks.next))
	}
	return tel, tel.chunks.next[0].(*spanPipeline)
}

// endSpans ends n spans, as captures finishing at once do.
func endSpans(tel *Telemetry, n int) {
	tracer := tel.TracerProvider().Tracer("burst")
	for range n {
		_, s := tracer.Start(context.Background(), "span")
		s.End()
	}
}

// settle waits until every span ended has been exported or counted lost.
func settle(t *testing.T, p *spanPipeline, ended int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.exported.Load()+p.losses().total() != int64(ended); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d spans exported and %+v lost of %d", p.exported.Load(), p.losses(), ended)
		}
	}
}

// points are the final values of a metric's data points, by the value of
// attribute key (by "" when the point has none).
func points(t *testing.T, r *telemetrytest.Receiver, name, key string) map[string]int64 {
	t.Helper()
	m := r.Metric(name)
	if m == nil {
		t.Fatalf("no %s received (got %v)", name, r.MetricNames())
	}
	var dps []*metricspb.NumberDataPoint
	switch d := m.GetData().(type) {
	case *metricspb.Metric_Sum:
		if !d.Sum.GetIsMonotonic() {
			t.Errorf("%s is not a monotonic counter", name)
		}
		dps = d.Sum.GetDataPoints()
	case *metricspb.Metric_Gauge:
		dps = d.Gauge.GetDataPoints()
	default:
		t.Fatalf("%s: unexpected data %T", name, d)
	}
	out := map[string]int64{}
	for _, dp := range dps {
		if e := telemetrytest.Attr(dp.GetAttributes(), string(AttrTelemetryExporter)); e != spanExporterOTLP {
			t.Errorf("%s: a point of exporter %v", name, e)
		}
		k, _ := telemetrytest.Attr(dp.GetAttributes(), key).(string)
		out[k] = dp.GetAsInt()
	}
	return out
}

// TestDroppedSpansAreCountedAndLogged: while the collector is behind,
// spans ending beyond the queue are dropped (captures never wait); the
// loss is logged at once, and brainwire.telemetry.spans.dropped counts
// exactly the spans that never reached the collector.
func TestDroppedSpansAreCountedAndLogged(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	logs := &logLines{}
	tel, p := startToReceiver(t, r, smallQueue, logs.logger())
	r.Hold()
	t.Cleanup(r.Release) // before the telemetry's Shutdown, should the test fail
	const spans = 2000
	endSpans(tel, spans)
	// Logged while the collector still holds the exports.
	for deadline := time.Now().Add(5 * time.Second); len(logs.lossLines(t)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no warning of dropped spans within 5s")
		}
	}
	r.Release()
	settle(t, p, spans)
	if lines := logs.lossLines(t); len(lines) != 1 {
		t.Errorf("%d warnings before the interval was over, want 1: %v", len(lines), lines)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	got := len(r.Spans())
	dropped := points(t, r, MetricSpansDropped, string(AttrSpanDropReason))
	t.Logf("the collector got %d of %d spans; dropped %v; warnings %v", got, spans, dropped, logs.lossLines(t))
	if want := int64(spans - got); dropped[dropQueueFull] != want || dropped[dropExportFailed] != 0 || dropped[dropShutdown] != 0 {
		t.Errorf("the collector got %d of %d spans; dropped by reason: %v, want %s %d", got, spans, dropped, dropQueueFull, want)
	}
	if dropped[dropQueueFull] == 0 {
		t.Error("no span was dropped: the queue never overflowed")
	}
	if exported := points(t, r, MetricSpansExported, ""); exported[""] != int64(got) {
		t.Errorf("%s %v, want %d", MetricSpansExported, exported, got)
	}
	if queue := points(t, r, MetricSpansQueue, ""); queue[""] != 0 {
		t.Errorf("%s %v after shutdown", MetricSpansQueue, queue)
	}

	// One line at once, the rest at shutdown: together, every span lost.
	lines := logs.lossLines(t)
	var logged float64
	for _, l := range lines {
		if l["exporter"] != spanExporterOTLP {
			t.Errorf("warning of exporter %v", l["exporter"])
		}
		n, _ := l["spans"].(float64)
		logged += n
	}
	if len(lines) > 2 || logged != float64(spans-got) {
		t.Errorf("%d warnings for %v spans, want at most 2 for %d: %v", len(lines), logged, spans-got, lines)
	}
}

// TestNoLossReportsNothing: with room in the queue every span arrives,
// the drop counters read zero from the start and nothing is logged.
func TestNoLossReportsNothing(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	logs := &logLines{}
	tuning := defaultSpanTuning
	tuning.batchTimeout = 10 * time.Millisecond
	tel, p := startToReceiver(t, r, tuning, logs.logger())
	const spans = 5000
	endSpans(tel, spans)
	settle(t, p, spans)
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(r.Spans()); got != spans {
		t.Errorf("the collector got %d of %d spans", got, spans)
	}
	want := map[string]int64{dropQueueFull: 0, dropExportFailed: 0, dropShutdown: 0}
	if dropped := points(t, r, MetricSpansDropped, string(AttrSpanDropReason)); len(dropped) != 3 || dropped[dropQueueFull] != 0 || dropped[dropExportFailed] != 0 || dropped[dropShutdown] != 0 {
		t.Errorf("%s %v, want %v", MetricSpansDropped, dropped, want)
	}
	if exported := points(t, r, MetricSpansExported, ""); exported[""] != spans {
		t.Errorf("%s %v, want %d", MetricSpansExported, exported, spans)
	}
	if lines := logs.lossLines(t); len(lines) > 0 {
		t.Errorf("warnings with nothing lost: %v", lines)
	}
}

// heldExporter answers each export with err; release, when set, holds
// each until it is closed.
type heldExporter struct {
	err     error
	release chan struct{}
}

func (e heldExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	if e.release != nil {
		<-e.release
	}
	return e.err
}

func (heldExporter) Shutdown(context.Context) error { return nil }

// TestFailedAndUnflushedSpansAreLost: spans whose export failed, and
// spans Shutdown could not flush in time, are counted and logged.
func TestFailedAndUnflushedSpansAreLost(t *testing.T) {
	t.Run("export_failed", func(t *testing.T) {
		logs := &logLines{}
		// One export, by ForceFlush, which returns its error (the
		// processor's own exports report theirs to the global handler).
		tuning := smallQueue
		tuning.batch, tuning.batchTimeout = 64, time.Hour
		p := newSpanPipeline(spanExporterConsole, heldExporter{err: errors.New("collector unavailable")}, false, tuning, logs.logger())
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
		tracer := tp.Tracer("t")
		for range 10 {
			_, s := tracer.Start(context.Background(), "span")
			s.End()
		}
		if err := tp.ForceFlush(t.Context()); err == nil {
			t.Error("ForceFlush succeeded through a failing exporter")
		}
		if err := tp.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if l := p.losses(); l != (spanLosses{failed: 10}) {
			t.Errorf("lost %+v, want 10 failed", l)
		}
		if lines := logs.lossLines(t); len(lines) != 1 || lines[0][dropExportFailed] != float64(10) {
			t.Errorf("warnings %v, want one of 10 spans failed", lines)
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		logs := &logLines{}
		release := make(chan struct{})
		defer close(release)
		p := newSpanPipeline(spanExporterConsole, heldExporter{release: release}, false, smallQueue, logs.logger())
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
		tracer := tp.Tracer("t")
		for range 30 {
			_, s := tracer.Start(context.Background(), "span")
			s.End()
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := tp.Shutdown(ctx); err == nil {
			t.Error("Shutdown flushed through an exporter that never answers")
		}
		if l := p.losses(); l != (spanLosses{shutdown: 30}) {
			t.Errorf("lost %+v, want 30 at shutdown", l)
		}
		if lines := logs.lossLines(t); len(lines) != 1 || lines[0][dropShutdown] != float64(30) {
			t.Errorf("warnings %v, want one of 30 spans lost at shutdown", lines)
		}
	})
}

// BenchmarkSpanEnd is the cost of a span's end in the SDK's batch
// processor alone and in a pipeline that counts it. The queue holds every
// span, so that neither drops any: dropping costs less than queueing.
func BenchmarkSpanEnd(b *testing.B) {
	span := tracetest.SpanStub{Name: "span", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})}.Snapshot()
	for _, counted := range []bool{false, true} {
		name := "batch_processor"
		if counted {
			name = "counted"
		}
		b.Run(name, func(b *testing.B) {
			t := defaultSpanTuning
			t.queue = b.N
			var sp sdktrace.SpanProcessor = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter(),
				sdktrace.WithMaxQueueSize(t.queue+t.batch+1), sdktrace.WithMaxExportBatchSize(t.batch))
			if counted {
				sp = newSpanPipeline(spanExporterOTLP, tracetest.NewNoopExporter(), false, t, nil)
			}
			defer func() { _ = sp.Shutdown(context.Background()) }()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				sp.OnEnd(span)
			}
			b.StopTimer()
			if p, ok := sp.(*spanPipeline); ok && p.queueFull.Load() > 0 {
				b.Fatalf("%d spans dropped", p.queueFull.Load())
			}
		})
	}
}
