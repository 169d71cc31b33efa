package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/syncbuf"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/appinsights"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

func recorded(t *testing.T, content bool) (*telemetry.Telemetry, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(telemetry.SpanLimits()))
	tel, err := telemetry.New(telemetry.Config{TracerProvider: tp, CaptureContent: content,
		Agent: telemetry.Agent{Name: "Classifier", Provider: "azure.ai.agents"}})
	if err != nil {
		t.Fatal(err)
	}
	return tel, rec
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestTransportNamesSpansByOperation: the provider names its calls on
// the request context; a call without a name is a plain HTTP client span.
func TestTransportNamesSpansByOperation(t *testing.T) {
	tel, rec := recorded(t, false)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") == "" {
			t.Error("no traceparent upstream")
		}
	}))
	defer up.Close()
	rt := tel.WrapTransport(up.Client().Transport)
	for _, c := range []struct {
		ctx           context.Context
		name, op, run string
	}{
		{brainwire.WithOperation(context.Background(), brainwire.Operation{Name: "submit_tool_outputs", ThreadID: "thread_1", RunID: "run_2"}),
			"submit_tool_outputs", "submit_tool_outputs", "run_2"},
		{context.Background(), "POST", "", ""},
	} {
		req, _ := http.NewRequestWithContext(c.ctx, http.MethodPost, strings.Replace(up.URL, "//", "//user:pw@", 1)+"/threads/thread_1/runs/run_2/submit_tool_outputs?api-version=v1&sig=x&key=k#frag", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		spans := rec.Ended()
		s := spans[len(spans)-1]
		op, _ := spanAttr(s, "gen_ai.operation.name")
		run, _ := spanAttr(s, "foundry.run_id")
		u, _ := spanAttr(s, "url.full")
		// A credential never reaches a span: of the query only api-version stays.
		if s.Name() != c.name || op.AsString() != c.op || run.AsString() != c.run || u.AsString() != up.URL+"/threads/thread_1/runs/run_2/submit_tool_outputs?api-version=v1" {
			t.Errorf("span %q op %q run %q url %s; want %q %q %q", s.Name(), op.AsString(), run.AsString(), u.AsString(), c.name, c.op, c.run)
		}
	}
}

type fakeTools struct {
	result brainwire.ToolResult
	panics bool
}

func (f fakeTools) Definitions() []brainwire.ToolDefinition {
	return []brainwire.ToolDefinition{{Name: "file_capture"}}
}

func (f fakeTools) Call(context.Context, brainwire.ToolCall) brainwire.ToolResult {
	if f.panics {
		panic("boom")
	}
	return f.result
}

func TestWrapTools(t *testing.T) {
	tel, rec := recorded(t, false)
	call := brainwire.ToolCall{ID: "call_1", Name: "file_capture", Arguments: json.RawMessage(`{"text":"secret"}`)}
	set := tel.WrapTools(fakeTools{result: brainwire.ToolResult{Output: `{"error":"invalid_bucket","message":"Misc"}`, IsError: true}})
	if len(set.Definitions()) != 1 {
		t.Error("definitions not passed through")
	}
	if res := set.Call(context.Background(), call); !res.IsError {
		t.Error("result not passed through")
	}
	s := rec.Ended()[0]
	typ, _ := spanAttr(s, "error.type")
	if s.Name() != "execute_tool file_capture" || s.Status().Code != codes.Error || typ.AsString() != "invalid_bucket" {
		t.Errorf("span %s, status %v, error.type %v", s.Name(), s.Status(), typ)
	}
	for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if _, ok := spanAttr(s, k); ok {
			t.Errorf("%s recorded with content capture off", k)
		}
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		tel.WrapTools(fakeTools{panics: true}).Call(context.Background(), call)
	}()
	if s := rec.Ended()[1]; s.Status().Code != codes.Error {
		t.Errorf("panicking tool: span status %v", s.Status())
	}
}

// TestAppInsightsWithoutTracing sends chunks to Application Insights with
// no tracer: items of one capture still share an operation id.
func TestAppInsightsWithoutTracing(t *testing.T) {
	in := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
	cs, _ := appinsights.ParseConnectionString(in.ConnectionString())
	ai, err := appinsights.New(appinsights.Config{ConnectionString: cs})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.New(telemetry.Config{AppInsights: ai, CaptureContent: true, Agent: telemetry.Agent{Name: "Classifier"}})
	if err != nil {
		t.Fatal(err)
	}
	_, obs := tel.StartCapture(context.Background(), brainwire.Capture{Kind: brainwire.KindText, RunID: "run-1", ThreadID: "thread-1"})
	for i := range 3 {
		obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{RunID: "run-1", Index: i, Text: "x"}})
	}
	res := brainwire.CaptureResult{Outcome: brainwire.OutcomeUnresolved, ReasoningChunks: 3}
	obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &res})
	obs.End(res)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ai.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, reqs := in.Messages("Reasoning chunk"), in.RequestItems()
	if len(msgs) != 3 || len(reqs) != 1 {
		t.Fatalf("%d traces, %d requests", len(msgs), len(reqs))
	}
	op := reqs[0].Tags["ai.operation.id"]
	if len(op) != 32 || reqs[0].Data.BaseData.Properties["outcome"] != "unresolved" {
		t.Errorf("request %+v", reqs[0])
	}
	for _, m := range msgs {
		if m.Tags["ai.operation.id"] != op || m.Tags["ai.operation.parentId"] != reqs[0].Data.BaseData.ID {
			t.Errorf("chunk not correlated with its capture: %v", m.Tags)
		}
	}
}

func TestConsoleExporters(t *testing.T) {
	var out syncbuf.Buffer
	s, err := telemetry.SettingsFromEnv(func(k string) string {
		return map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.Start(context.Background(), s, telemetry.Options{Agent: telemetry.Agent{Name: "Classifier"}, Console: &out})
	if err != nil {
		t.Fatal(err)
	}
	_, obs := tel.StartCapture(context.Background(), brainwire.Capture{Kind: brainwire.KindText, RunID: "run-1"})
	obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{RunID: "run-1", Text: "thinking"}})
	res := brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "Ideas", Confidence: 0.8, ReasoningChunks: 1}
	obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &res})
	obs.End(res)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"invoke_agent Classifier"`, `"reasoning.chunk"`, `"thinking"`, `"brainwire.captures"`, `"gen_ai.client.operation.duration"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("console output lacks %s:\n%.2000s", want, out.String())
		}
	}
}

func TestErrorHandlerRateLimits(t *testing.T) {
	var out syncbuf.Buffer
	h := &telemetry.ErrorHandler{Logger: slog.New(slog.NewTextHandler(&out, nil))}
	for range 50 {
		h.Handle(errors.New("export failed: connection refused"))
	}
	if n := strings.Count(out.String(), "connection refused"); n != 1 {
		t.Errorf("%d log lines for 50 errors in a minute, want 1", n)
	}
}

// TestRunStatesOnTheStreamSpan: each run state that comes on a stream
// goes on that stream's span, also when the decoder hands it out after
// the body's end; the last state and the latest ids win, and a state
// without ids leaves them.
func TestRunStatesOnTheStreamSpan(t *testing.T) {
	tel, rec := recorded(t, false)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: done\ndata: [DONE]\n\n"))
	}))
	defer up.Close()
	ctx, obs := tel.StartCapture(context.Background(), brainwire.Capture{RunID: "run-1", Kind: brainwire.KindText})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.URL+"/threads/runs", nil)
	resp, err := tel.WrapTransport(up.Client().Transport).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	for _, ev := range []brainwire.AgentEvent{
		{Kind: brainwire.AgentRunStatus, Status: brainwire.RunQueued, ThreadID: "thread_1", RunID: "run_a"},
		{Kind: brainwire.AgentRunStatus, Status: brainwire.RunInProgress, ThreadID: "thread_1", RunID: "run_a"},
		{Kind: brainwire.AgentRunStatus, Status: brainwire.RunInProgress, ThreadID: "thread_1", RunID: "run_b"},
		{Kind: brainwire.AgentRunStatus, Status: brainwire.RunRequiresAction, ThreadID: "thread_1", RunID: "run_b"},
		{Kind: brainwire.AgentRunStatus, Status: brainwire.RunCancelling}, // no ids: they stay
	} {
		obs.ProviderEvent(ev)
	}
	resp.Body.Close()
	obs.End(brainwire.CaptureResult{})
	var stream sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindClient && !strings.HasPrefix(s.Name(), "invoke_agent") {
			stream = s
		}
	}
	if stream == nil {
		t.Fatal("no span for the stream")
	}
	for key, want := range map[string]string{"foundry.run.status": "cancelling", "foundry.run_id": "run_b",
		"gen_ai.response.id": "run_b", "foundry.thread_id": "thread_1", "gen_ai.conversation.id": "thread_1"} {
		if v, _ := spanAttr(stream, key); v.AsString() != want {
			t.Errorf("%s = %q, want %q", key, v.AsString(), want)
		}
	}
}
