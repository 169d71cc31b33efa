package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/appinsights"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// chunksPerCapture bounds a benchmark capture like a long real run.
const chunksPerCapture = 5000

// benchTelemetry builds telemetry with an SDK tracer (spans exported to
// nowhere through the batch processor, chunks kept by ChunkEvents as
// Start's provider keeps them, or with sdkEvents as SDK span events)
// and/or Application Insights (posting to a local endpoint that accepts
// everything).
func benchTelemetry(b *testing.B, tracing, sdkEvents, ai, content, hold bool, queue int) (*telemetry.Telemetry, *appinsights.Exporter) {
	b.Helper()
	cfg := telemetry.Config{CaptureContent: content, Agent: telemetry.Agent{Name: "Classifier", ID: "asst_1", Provider: "azure.ai.agents"}}
	if tracing {
		var sp sdktrace.SpanProcessor = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
		if !sdkEvents {
			cfg.ChunkEvents = telemetry.NewChunkEvents(sp)
			sp = cfg.ChunkEvents
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithRawSpanLimits(telemetry.SpanLimits()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		cfg.TracerProvider = tp
	}
	var exp *appinsights.Exporter
	if ai {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"itemsReceived":0,"itemsAccepted":0,"errors":[]}`)
		}))
		b.Cleanup(srv.Close)
		cs, _ := appinsights.ParseConnectionString("InstrumentationKey=00000000-0000-0000-0000-000000000001;IngestionEndpoint=" + srv.URL)
		var err error
		// The hot-path benchmarks hold batches until the end so that the
		// exporter's JSON and gzip work (measured by
		// BenchmarkAppInsightsDelivery) does not compete for the CPU.
		aiCfg := appinsights.Config{ConnectionString: cs, QueueSize: queue}
		if hold {
			aiCfg.BatchSize, aiCfg.FlushInterval = queue, time.Hour
		}
		if exp, err = appinsights.New(aiCfg); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
		cfg.AppInsights = exp
	}
	tel, err := telemetry.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return tel, exp
}

// BenchmarkReasoningChunk is the cost, on the capture's path, of one
// reasoning chunk: the provider event and the capture event the server
// hands the observer, i.e. the span event and the Application Insights
// enqueue. Captures restart every 5,000 chunks (outside the timer).
func BenchmarkReasoningChunk(b *testing.B) {
	for _, c := range []struct {
		name                            string
		tracing, sdkEvents, ai, content bool
	}{
		{"span_event", true, false, false, true},
		{"span_event_sdk", true, true, false, true},
		{"appinsights_enqueue", false, false, true, true},
		{"both", true, false, true, true},
		{"both_content_off", true, false, true, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			tel, exp := benchTelemetry(b, c.tracing, c.sdkEvents, c.ai, c.content, true, 1<<20)
			info := brainwire.Capture{Kind: brainwire.KindText, RunID: "run-8f1c2d3e", ThreadID: "thread-1", Text: "Call mom about her birthday"}
			var obs brainwire.CaptureObserver
			pe := brainwire.AgentEvent{Kind: brainwire.AgentTextChunk, ThreadID: "thread_abc123", RunID: "run_def456", Text: " birthday"}
			ce := brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{
				RunID: info.RunID, Text: " birthday", UpstreamRunID: "run_def456", UpstreamThreadID: "thread_abc123"}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%chunksPerCapture == 0 {
					b.StopTimer()
					if obs != nil {
						obs.End(brainwire.CaptureResult{})
					}
					_, obs = tel.StartCapture(context.Background(), info)
					b.StartTimer()
				}
				ce.Chunk.Index = i % chunksPerCapture
				obs.ProviderEvent(pe)
				obs.CaptureEvent(ce)
			}
			b.StopTimer()
			obs.End(brainwire.CaptureResult{})
			if exp != nil {
				st := exp.Stats()
				b.ReportMetric(float64(st.DroppedQueueFull)/float64(b.N), "dropped/op")
			}
		})
	}
}

// BenchmarkAppInsightsDelivery is the whole cost of one chunk's trace item
// in Application Insights, off the capture's path too: enqueue, envelope,
// JSON, gzip and the POST to a local endpoint, until Shutdown has sent all.
func BenchmarkAppInsightsDelivery(b *testing.B) {
	_, exp := benchTelemetry(b, false, false, true, true, false, b.N+1)
	tr := appinsights.Trace{Message: telemetry.ReasoningChunkMessage, Properties: []appinsights.Property{
		{Key: "run_id", Value: "run-8f1c2d3e"}, {Key: "chunk_index", Value: "42"}, {Key: "agent_run_id", Value: "run_def456"},
		{Key: "agent_thread_id", Value: "thread_abc123"}, {Key: "thread_id", Value: "thread-1"}, {Key: "reasoning_text", Value: " birthday"}}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		exp.TrackTrace(tr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exp.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := exp.Stats(); st.Sent != int64(b.N) {
		b.Fatalf("sent %d of %d", st.Sent, b.N)
	}
}

// BenchmarkCaptureLatency runs the same capture (#long:300: 303 reasoning
// chunks, through HTTP, the Foundry provider, the simulator and SQLite)
// with telemetry off and on, alternating, and reports each median and the
// overhead. Telemetry is on with content, exporting over OTLP/gRPC (otlp),
// to Application Insights (appinsights) or both, to local endpoints that
// accept without decoding, as backends in other processes would cost this
// one nothing. "unpaced" streams the chunks as fast as the machine goes:
// the worst case, where the capture is pure CPU and shares it with the
// exporters. "paced_1ms" pauses 1 ms per chunk, still many times faster
// than a model streams.
func BenchmarkCaptureLatency(b *testing.B) {
	recv := telemetrytest.NewDiscardingReceiver(b)
	ingest := telemetrytest.NewIngestion(b, telemetrytest.IngestDiscard)
	otlp := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()}
	ai := map[string]string{"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString()}
	both := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint(), "APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString()}
	for _, c := range []struct {
		name  string
		env   map[string]string
		delay time.Duration
	}{
		{"unpaced/otlp", otlp, -1},
		{"unpaced/appinsights", ai, -1},
		{"unpaced/both", both, -1},
		{"paced_1ms/both", both, time.Millisecond},
	} {
		b.Run(c.name, func(b *testing.B) {
			off := newPacedStack(b, nil, c.delay)
			on := newPacedStack(b, c.env, c.delay)
			const text = "Call mom about her birthday on Sunday #long:300"
			for range 2 {
				off.capture(text, nil)
				on.capture(text, nil)
			}
			var lOff, lOn []time.Duration
			b.ResetTimer()
			for i := range b.N {
				first, second := off, on
				if i%2 == 1 {
					first, second = on, off
				}
				r1, r2 := first.capture(text, nil), second.capture(text, nil)
				if first == on {
					r1, r2 = r2, r1
				}
				lOff, lOn = append(lOff, r1.latency), append(lOn, r2.latency)
			}
			b.StopTimer()
			mOff, mOn := median(lOff), median(lOn)
			b.ReportMetric(float64(mOff.Microseconds())/1000, "off-ms")
			b.ReportMetric(float64(mOn.Microseconds())/1000, "on-ms")
			b.ReportMetric(100*(float64(mOn)-float64(mOff))/float64(mOff), "overhead-%")
		})
	}
}
