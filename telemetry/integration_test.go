package telemetry_test

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// A caller's trace the server must continue.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
)

func attr(s *telemetrytest.Span, key string) any { return telemetrytest.Attr(s.Attributes, key) }

func str(v any) string {
	s, _ := v.(string)
	return s
}

func spanID(b []byte) string { return hex.EncodeToString(b) }

// tree indexes one trace's spans.
type tree struct {
	spans  []*telemetrytest.Span
	byID   map[string]*telemetrytest.Span
	kids   map[string][]*telemetrytest.Span
	server *telemetrytest.Span
	agent  *telemetrytest.Span
}

func newTree(t *testing.T, spans []*telemetrytest.Span) *tree {
	t.Helper()
	tr := &tree{spans: spans, byID: map[string]*telemetrytest.Span{}, kids: map[string][]*telemetrytest.Span{}}
	for _, s := range spans {
		tr.byID[spanID(s.SpanId)] = s
		tr.kids[spanID(s.ParentSpanId)] = append(tr.kids[spanID(s.ParentSpanId)], s)
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			tr.server = s
		}
		if strings.HasPrefix(s.Name, "invoke_agent ") {
			tr.agent = s
		}
	}
	if tr.server == nil || tr.agent == nil {
		t.Fatalf("trace lacks a server or invoke_agent span: %v", names(spans))
	}
	return tr
}

func (tr *tree) children(s *telemetrytest.Span, name string) []*telemetrytest.Span {
	var out []*telemetrytest.Span
	for _, k := range tr.kids[spanID(s.SpanId)] {
		if name == "" || k.Name == name {
			out = append(out, k)
		}
	}
	return out
}

func names(spans []*telemetrytest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// findAgentSpan returns the invoke_agent span whose run_id is runID.
func findAgentSpan(t *testing.T, recv *telemetrytest.Receiver, runID string) *telemetrytest.Span {
	t.Helper()
	for _, s := range recv.Spans() {
		if strings.HasPrefix(s.Name, "invoke_agent ") && attr(s, "run_id") == runID {
			return s
		}
	}
	t.Fatalf("no invoke_agent span with run_id %s among %d spans", runID, len(recv.Spans()))
	return nil
}

// TestCaptureTelemetry runs captures of 3, 300 and twice 10,000 reasoning
// chunks through the real server and checks what an OTLP collector (with
// gRPC's default 4 MiB limit) and Application Insights received once
// telemetry was shut down: every chunk, in order. The two long runs end in
// one batch of spans, which is split into requests under the limit.
func TestCaptureTelemetry(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	ingest := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
	s := newStack(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           recv.Endpoint(),
		"OTEL_SERVICE_NAME":                     "brainwire-test",
		"OTEL_RESOURCE_ATTRIBUTES":              "deployment.environment.name=test,team=second%20brain",
		"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString(),
	})

	type run struct {
		n      int
		header map[string]string
		res    result
	}
	runs := []*run{
		{n: 3, header: map[string]string{"traceparent": "00-" + callerTraceID + "-" + callerSpanID + "-01"}},
		{n: 300},
		{n: 10000},
		{n: 10000},
	}
	for _, r := range runs {
		r.res = s.capture(fmt.Sprintf("Call mom about her birthday on Sunday #long:%d", r.n), r.header)
		if got := r.res.outcome(); got != "CLASSIFIED" {
			t.Fatalf("#long:%d: outcome %s, want CLASSIFIED (%v)", r.n, got, r.res.events)
		}
	}
	failed := s.capture("Renew the car insurance before Friday #fail", nil)
	if failed.outcome() != "ERROR" {
		t.Fatalf("#fail: outcome %s, want ERROR", failed.outcome())
	}
	if err := s.shutdown(15 * time.Second); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	for _, sp := range recv.Spans() {
		if sp.DroppedEventsCount != 0 || sp.DroppedAttributesCount != 0 || sp.DroppedLinksCount != 0 {
			t.Errorf("span %s dropped %d events, %d attributes, %d links", sp.Name, sp.DroppedEventsCount, sp.DroppedAttributesCount, sp.DroppedLinksCount)
		}
		for _, ev := range sp.Events {
			if ev.DroppedAttributesCount != 0 {
				t.Errorf("span %s: event %s dropped %d attributes", sp.Name, ev.Name, ev.DroppedAttributesCount)
			}
		}
	}
	if n := recv.LargestTraceRequest(); n > 4<<20 {
		t.Errorf("a trace export of %d bytes, over the 4 MiB a collector takes by default", n)
	} else {
		t.Logf("largest trace export: %d bytes", n)
	}
	if got := telemetrytest.Attr(recv.Spans()[0].Resource.Values, "service.name"); got != "brainwire-test" {
		t.Errorf("service.name = %v", got)
	}
	if got := telemetrytest.Attr(recv.Spans()[0].Resource.Values, "team"); got != "second brain" {
		t.Errorf("resource attribute team = %v", got)
	}

	for i, r := range runs {
		t.Run(fmt.Sprintf("%d_long_%d", i, r.n), func(t *testing.T) {
			agent := findAgentSpan(t, recv, r.res.runID)
			tr := newTree(t, recv.Trace(hex.EncodeToString(agent.TraceId)))
			checkTree(t, tr)
			if r.header != nil {
				if got := hex.EncodeToString(agent.TraceId); got != callerTraceID {
					t.Errorf("trace id %s, want the caller's %s", got, callerTraceID)
				}
				if got := spanID(tr.server.ParentSpanId); got != callerSpanID {
					t.Errorf("server span's parent %s, want the caller's span %s", got, callerSpanID)
				}
			}
			checkAgentSpan(t, agent, r.res)
			chunks := s.chunks.get(r.res.runID)
			if len(chunks) < r.n {
				t.Fatalf("the server produced %d chunks, want at least %d", len(chunks), r.n)
			}
			checkChunkEvents(t, agent, r.res, len(chunks), true)
			if got := attr(agent, "brainwire.capture.reasoning_chunks"); got != int64(len(chunks)) {
				t.Errorf("reasoning_chunks = %v, want %d", got, len(chunks))
			}
			checkAppInsights(t, ingest, agent, r.res, len(chunks), true)
			t.Logf("#long:%d: %d chunks, %d spans in the trace, capture took %s",
				r.n, len(chunks), len(tr.spans), r.res.latency.Round(time.Millisecond))
		})
	}

	t.Run("failed run", func(t *testing.T) {
		agent := findAgentSpan(t, recv, failed.runID)
		if got := attr(agent, "brainwire.capture.outcome"); got != "error" {
			t.Errorf("outcome = %v, want error", got)
		}
		if agent.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("status %v, want error", agent.Status)
		}
		if got := attr(agent, "error.type"); got != "server_error" {
			t.Errorf("error.type = %v, want server_error (the run's last_error code)", got)
		}
	})

	// Metric names, labels and values against the dashboards' queries:
	// dashboards/verify. Here: a failed run is one upstream error, and no
	// capture is left open.
	t.Run("metrics", func(t *testing.T) {
		for _, dp := range recv.Metric("brainwire.upstream.errors").GetSum().GetDataPoints() {
			if telemetrytest.Attr(dp.Attributes, "error.type") != "server_error" || dp.GetAsInt() != 1 {
				t.Errorf("upstream errors: %v = %d, want one server_error", dp.Attributes, dp.GetAsInt())
			}
		}
		var active int64 = -1
		for _, dp := range recv.Metric("brainwire.captures.active").GetSum().GetDataPoints() {
			active = dp.GetAsInt()
		}
		if active != 0 {
			t.Errorf("active captures after all ended: %d", active)
		}
	})
	if errs := ingest.Errors(); len(errs) > 0 {
		t.Errorf("Application Insights endpoint saw protocol errors: %v", errs)
	}
}

// checkTree checks a capture's span tree: server -> invoke_agent ->
// (upstream calls, execute_tool -> store).
func checkTree(t *testing.T, tr *tree) {
	t.Helper()
	if tr.server.Name != "POST /api/capture" {
		t.Errorf("server span %q, want POST /api/capture", tr.server.Name)
	}
	if attr(tr.server, "http.route") != "/api/capture" || attr(tr.server, "http.response.status_code") != int64(200) {
		t.Errorf("server span attributes %v", tr.server.Attributes)
	}
	if spanID(tr.agent.ParentSpanId) != spanID(tr.server.SpanId) {
		t.Errorf("invoke_agent's parent is not the server span")
	}
	if tr.agent.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("invoke_agent kind %v, want client", tr.agent.Kind)
	}
	runs := tr.children(tr.agent, "process_thread_run")
	submits := tr.children(tr.agent, "submit_tool_outputs")
	tools := tr.children(tr.agent, "execute_tool file_capture")
	if len(runs) != 1 || len(submits) != 1 || len(tools) != 1 {
		t.Fatalf("invoke_agent's children: %v; want process_thread_run, execute_tool file_capture, submit_tool_outputs",
			names(tr.children(tr.agent, "")))
	}
	for _, up := range append(runs, submits...) {
		if up.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(up, "http.request.method") != "POST" ||
			attr(up, "http.response.status_code") != int64(200) || !strings.Contains(str(attr(up, "url.full")), "/threads") ||
			attr(up, "gen_ai.operation.name") != up.Name || attr(up, "server.address") != "127.0.0.1" {
			t.Errorf("upstream span %s: kind %v, attributes %v", up.Name, up.Kind, up.Attributes)
		}
		if !strings.HasPrefix(str(attr(up, "foundry.thread_id")), "thread_") || !strings.HasPrefix(str(attr(up, "foundry.run_id")), "run_") {
			t.Errorf("upstream span %s lacks the upstream ids: %v", up.Name, up.Attributes)
		}
		if up.EndTimeUnixNano < up.StartTimeUnixNano || up.EndTimeUnixNano > tr.agent.EndTimeUnixNano {
			t.Errorf("upstream span %s does not end within the run", up.Name)
		}
	}
	if got := attr(runs[0], "foundry.run.status"); got != "requires_action" {
		t.Errorf("process_thread_run saw run status %v, want requires_action", got)
	}
	if got := attr(submits[0], "foundry.run.status"); got != "completed" {
		t.Errorf("submit_tool_outputs saw run status %v, want completed", got)
	}
	if attr(submits[0], "foundry.run_id") != attr(runs[0], "foundry.run_id") {
		t.Errorf("the two calls name different runs")
	}
	tool := tools[0]
	if attr(tool, "gen_ai.operation.name") != "execute_tool" || attr(tool, "gen_ai.tool.name") != "file_capture" ||
		!strings.HasPrefix(str(attr(tool, "gen_ai.tool.call.id")), "call_") {
		t.Errorf("execute_tool attributes %v", tool.Attributes)
	}
	if !strings.Contains(str(attr(tool, "gen_ai.tool.call.arguments")), `"bucket"`) ||
		!strings.Contains(str(attr(tool, "gen_ai.tool.call.result")), `"item_id"`) {
		t.Errorf("execute_tool lacks arguments or result: %v", tool.Attributes)
	}
	if tool.StartTimeUnixNano < runs[0].EndTimeUnixNano || tool.EndTimeUnixNano > submits[0].StartTimeUnixNano {
		t.Errorf("execute_tool does not sit between the two upstream calls")
	}
	stores := tr.children(tool, "store.file")
	if len(stores) != 1 {
		t.Fatalf("execute_tool's children: %v, want store.file", names(tr.children(tool, "")))
	}
	if attr(stores[0], "db.system.name") != "sqlite" || attr(stores[0], "db.operation.name") != "file" ||
		attr(stores[0], "brainwire.inbox_item_id") == nil {
		t.Errorf("store span attributes %v", stores[0].Attributes)
	}
}

func checkAgentSpan(t *testing.T, agent *telemetrytest.Span, r result) {
	t.Helper()
	want := map[string]any{
		"gen_ai.operation.name":      "invoke_agent",
		"gen_ai.provider.name":       "azure.ai.agents",
		"gen_ai.agent.name":          "Classifier",
		"gen_ai.agent.id":            "asst_brainwire_sim",
		"run_id":                     r.runID,
		"thread_id":                  r.threadID,
		"brainwire.capture.kind":     "text",
		"brainwire.capture.outcome":  "classified",
		"brainwire.capture.bucket":   "People",
		"foundry.run.status":         "completed",
		"brainwire.capture.question": nil,
	}
	for k, v := range want {
		if got := attr(agent, k); got != v {
			t.Errorf("invoke_agent %s = %v, want %v", k, got, v)
		}
	}
	if agent.Name != "invoke_agent Classifier" {
		t.Errorf("name %q", agent.Name)
	}
	conv := str(attr(agent, "gen_ai.conversation.id"))
	if !strings.HasPrefix(conv, "thread_") || attr(agent, "foundry.thread_id") != conv {
		t.Errorf("gen_ai.conversation.id = %q, foundry.thread_id = %v", conv, attr(agent, "foundry.thread_id"))
	}
	if !strings.HasPrefix(str(attr(agent, "gen_ai.response.id")), "run_") {
		t.Errorf("gen_ai.response.id = %v", attr(agent, "gen_ai.response.id"))
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "brainwire.capture.time_to_outcome_ms"} {
		if v, ok := attr(agent, k).(int64); !ok || v < 0 || (v == 0 && k != "brainwire.capture.time_to_outcome_ms") {
			t.Errorf("%s = %v", k, attr(agent, k))
		}
	}
	if c, ok := attr(agent, "brainwire.capture.confidence").(float64); !ok || c <= 0.6 || c > 1 {
		t.Errorf("confidence = %v", attr(agent, "brainwire.capture.confidence"))
	}
	if !strings.Contains(str(attr(agent, "gen_ai.input.messages")), "Call mom about her birthday") {
		t.Errorf("gen_ai.input.messages = %v", attr(agent, "gen_ai.input.messages"))
	}
	// The time to outcome counts from the capture's start, which comes a
	// little before the agent's span: bound it by what the phone waited.
	if tto := attr(agent, "brainwire.capture.time_to_outcome_ms").(int64); tto > r.latency.Milliseconds()+1 {
		t.Errorf("time to outcome %d ms is longer than the phone waited (%s)", tto, r.latency)
	}
}

// checkChunkEvents checks the invoke_agent span carries one
// reasoning.chunk event per chunk, indices 0..n-1 in order, among its
// other events in time order.
func checkChunkEvents(t *testing.T, agent *telemetrytest.Span, r result, n int, content bool) {
	t.Helper()
	upRun, upThread := attr(agent, "foundry.run_id"), attr(agent, "foundry.thread_id")
	idx := 0
	var last uint64
	for _, ev := range agent.Events {
		if ev.TimeUnixNano < last {
			t.Fatalf("event %s (chunk %d) is timed before its predecessor", ev.Name, idx)
		}
		last = ev.TimeUnixNano
		if ev.Name != "reasoning.chunk" {
			continue
		}
		if got := telemetrytest.Attr(ev.Attributes, "chunk_index"); got != int64(idx) {
			t.Fatalf("event %d has chunk_index %v", idx, got)
		}
		if got := telemetrytest.Attr(ev.Attributes, "run_id"); got != r.runID {
			t.Fatalf("chunk %d: run_id %v, want COMPLETE's runId %s", idx, got, r.runID)
		}
		if telemetrytest.Attr(ev.Attributes, "foundry.run_id") != upRun || telemetrytest.Attr(ev.Attributes, "foundry.thread_id") != upThread {
			t.Fatalf("chunk %d: upstream ids %v", idx, ev.Attributes)
		}
		text, has := telemetrytest.Attr(ev.Attributes, "reasoning_text").(string)
		if content && (!has || text == "") {
			t.Fatalf("chunk %d has no reasoning_text", idx)
		}
		if !content && has {
			t.Fatalf("chunk %d carries reasoning_text with content capture off", idx)
		}
		idx++
	}
	if idx != n {
		t.Fatalf("%d reasoning.chunk events, want %d", idx, n)
	}
}

// checkAppInsights checks one trace item per chunk, correlated with the
// capture's trace, and the capture's request item.
func checkAppInsights(t *testing.T, ingest *telemetrytest.Ingestion, agent *telemetrytest.Span, r result, n int, content bool) {
	t.Helper()
	traceID, agentID := hex.EncodeToString(agent.TraceId), spanID(agent.SpanId)
	seen := make([]bool, n)
	for _, env := range ingest.Messages("Reasoning chunk") {
		p := env.Data.BaseData.Properties
		if p["run_id"] != r.runID {
			continue
		}
		i, err := strconv.Atoi(p["chunk_index"])
		if err != nil || i < 0 || i >= n || seen[i] {
			t.Fatalf("chunk trace with chunk_index %q (n=%d)", p["chunk_index"], n)
		}
		seen[i] = true
		if env.Data.BaseData.SeverityLevel != 1 {
			t.Fatalf("chunk %d: severity %d, want 1 (Information)", i, env.Data.BaseData.SeverityLevel)
		}
		if env.Tags["ai.operation.id"] != traceID || env.Tags["ai.operation.parentId"] != agentID {
			t.Fatalf("chunk %d: operation %s/%s, want %s/%s", i, env.Tags["ai.operation.id"], env.Tags["ai.operation.parentId"], traceID, agentID)
		}
		if p["agent_run_id"] != attr(agent, "foundry.run_id") {
			t.Fatalf("chunk %d: agent_run_id %q", i, p["agent_run_id"])
		}
		if _, has := p["reasoning_text"]; has != content {
			t.Fatalf("chunk %d: reasoning_text present = %v with content capture %v", i, has, content)
		}
		if !strings.HasPrefix(env.Name, "Microsoft.ApplicationInsights.") || !strings.HasSuffix(env.Name, ".Message") || env.IKey == "" {
			t.Fatalf("chunk %d: envelope name %q, iKey %q", i, env.Name, env.IKey)
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("no Application Insights trace for chunk %d of %d", i, n)
		}
	}
	var req *telemetrytest.Envelope
	for _, env := range ingest.RequestItems() {
		if env.Data.BaseData.Properties["run_id"] == r.runID {
			req = &env
		}
	}
	if req == nil {
		t.Fatal("no Application Insights request for the capture")
	}
	p := req.Data.BaseData.Properties
	if req.Tags["ai.operation.id"] != traceID || req.Data.BaseData.ID != agentID || p["outcome"] != "classified" ||
		p["bucket"] != "People" || p["reasoning_chunks"] != strconv.Itoa(n) || !req.Data.BaseData.Success ||
		req.Tags["ai.operation.name"] != "POST /api/capture" {
		t.Errorf("request item: tags %v, data %+v", req.Tags, req.Data.BaseData)
	}
}
