package telemetry_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

const candidateVersion = "sha256:c0ffeec0ffee"

// newUpstream is an agent service that refuses every other call (503)
// and answers the rest with a short event stream.
func newUpstream(t *testing.T) string {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: done\ndata: {}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runShadow drives a shadow run through telemetry everywhere a run
// reaches it: StartShadow, an upstream call the agent service refuses, the
// retry layer's Resend and the call sent again, a tool call that fails, an
// in-stream error and a failed run state, n reasoning chunks, the outcome
// and End. It returns where the run is traced.
func runShadow(t *testing.T, tel *telemetry.Telemetry, upstream string, parent context.Context, production brainwire.TraceRef, runID string, n int) brainwire.TraceRef {
	ctx, co := tel.StartShadow(parent, brainwire.Capture{
		Kind: brainwire.KindText, RunID: runID, ThreadID: "thread_" + runID, Text: "Call mom about her birthday on Sunday",
		Agent: brainwire.AgentInfo{Version: candidateVersion, Instructions: "candidate", Defined: true},
	}, production)
	ref, _ := brainwire.RunTraceFrom(ctx)
	rt := tel.WrapTransport(http.DefaultTransport)
	call := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(brainwire.WithOperation(ctx, brainwire.Operation{Name: "create_response"}), http.MethodPost, upstream, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Errorf("upstream: %v", err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	call(ctx)
	call(tel.Resend(ctx, "create_response", 1, "503", 0))
	tel.WrapTools(fakeTools{result: brainwire.ToolResult{Output: `{"error":"invalid_bucket"}`, IsError: true}}).
		Call(ctx, brainwire.ToolCall{ID: "call_1", Name: "file_capture"})
	co.ProviderEvent(brainwire.AgentEvent{Kind: brainwire.AgentError, ErrorCode: "server_error"})
	co.ProviderEvent(brainwire.AgentEvent{Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed})
	for i := range n {
		co.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{
			RunID: runID, Index: i, Text: fmt.Sprintf("thought %d ", i), UpstreamRunID: "resp_" + runID, UpstreamThreadID: "conv_" + runID}})
	}
	res := brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "Projects", Confidence: 0.9, ReasoningChunks: n,
		UpstreamRunID: "resp_" + runID, UpstreamThreadID: "conv_" + runID, HasUsage: true, Usage: brainwire.Usage{PromptTokens: 100, CompletionTokens: 20}}
	co.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &res})
	co.End(res)
	return ref
}

// TestShadowRunIsItsOwnTrace: a shadow run is a root invoke_agent span of
// a trace of its own, not a child of the span it started under, linked to
// the production run's span and marked as a shadow of the candidate's
// version, with every reasoning chunk as an event in order and its
// upstream and tool calls beneath it; Application Insights gets nothing
// of it.
func TestShadowRunIsItsOwnTrace(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	ingest := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
	s := newStack(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           recv.Endpoint(),
		"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString(),
	})
	filed := s.capture("Call mom about her birthday on Sunday", nil)
	prod := s.itemOf(filed).AgentRun
	// The runner's context may carry a span (the request's, or its own):
	// the shadow's trace is never under it.
	outer := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	const n = 40
	ref := runShadow(t, s.tel, newUpstream(t), trace.ContextWithSpanContext(context.Background(), outer), prod.Trace(), "shadow_1", n)
	if err := s.shutdown(10e9); err != nil {
		t.Fatalf("flush: %v", err)
	}

	shadow := findAgentSpan(t, recv, "shadow_1")
	production := findAgentSpan(t, recv, filed.runID)
	traceID := hex.EncodeToString(shadow.TraceId)
	if traceID == prod.TraceID || traceID == outer.TraceID().String() || len(shadow.ParentSpanId) != 0 {
		t.Errorf("shadow span in trace %s under %x; production's trace is %s, the context's %s", traceID, shadow.ParentSpanId, prod.TraceID, outer.TraceID())
	}
	if ref.TraceID != traceID || ref.SpanID != spanID(shadow.SpanId) {
		t.Errorf("run trace %+v, the span is %s/%s", ref, traceID, spanID(shadow.SpanId))
	}
	if len(shadow.Links) != 1 || hex.EncodeToString(shadow.Links[0].TraceId) != prod.TraceID || spanID(shadow.Links[0].SpanId) != prod.SpanID {
		t.Errorf("links %v, want one to the production run's span %s/%s", shadow.Links, prod.TraceID, prod.SpanID)
	}
	for k, v := range map[string]any{"brainwire.shadow": true, "gen_ai.agent.version": candidateVersion, "brainwire.capture.bucket": "Projects"} {
		if got := attr(shadow, k); got != v {
			t.Errorf("shadow span %s = %v, want %v", k, got, v)
		}
	}
	if got := attr(production, "brainwire.shadow"); got != nil {
		t.Errorf("production span brainwire.shadow = %v", got)
	}
	checkChunkEvents(t, shadow, result{runID: "shadow_1"}, n, true)
	var beneath []string
	for _, sp := range recv.Trace(traceID) {
		if sp != shadow && spanID(sp.ParentSpanId) == spanID(shadow.SpanId) {
			beneath = append(beneath, sp.Name)
		}
	}
	slices.Sort(beneath)
	if want := []string{"create_response", "create_response", "execute_tool file_capture"}; !slices.Equal(beneath, want) {
		t.Errorf("spans beneath the shadow's %v, want %v", beneath, want)
	}
	if !ingest.Contains(filed.runID) || ingest.Contains("shadow_1") {
		t.Errorf("Application Insights has the production run: %v, the shadow run: %v; want only production's", ingest.Contains(filed.runID), ingest.Contains("shadow_1"))
	}
}

// productionPoints renders every data point recv got of the metrics a
// capture moves: by name and attributes, the value (a histogram's count,
// and its sum and buckets unless it measures time, which no two runs
// share). The shadow instruments are left out, and so is the span
// pipeline's own accounting, which counts every span it sent.
func productionPoints(recv *telemetrytest.Receiver) map[string]string {
	out := map[string]string{}
	for _, name := range recv.MetricNames() {
		if strings.HasPrefix(name, "brainwire.shadow.") || strings.HasPrefix(name, "brainwire.telemetry.") {
			continue
		}
		m := recv.Metric(name)
		var points []*metricspb.NumberDataPoint
		switch d := m.Data.(type) {
		case *metricspb.Metric_Sum:
			points = d.Sum.DataPoints
		case *metricspb.Metric_Gauge:
			points = d.Gauge.DataPoints
		case *metricspb.Metric_Histogram:
			for _, dp := range d.Histogram.DataPoints {
				v := fmt.Sprint(dp.Count)
				if m.Unit != "s" {
					v += fmt.Sprint(" ", dp.GetSum(), dp.BucketCounts)
				}
				out[name+attrKey(dp.Attributes)] = v
			}
		}
		for _, dp := range points {
			out[name+attrKey(dp.Attributes)] = fmt.Sprint(dp.GetAsInt(), dp.GetAsDouble())
		}
	}
	return out
}

func attrKey(kvs []*commonpb.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, fmt.Sprintf("%s=%v", kv.Key, telemetrytest.Attr(kvs, kv.Key)))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// TestShadowCountsNoProductionFigure runs the same production captures
// and corrections in two processes, one with shadow trials beside them:
// every production data point is the same in both, and only the shadow
// instruments count the trials: kept, by agreement and each arm's bucket;
// dropped, by reason; scored, each arm at a first recategorize. A process
// without a shadow declares no shadow series.
func TestShadowCountsNoProductionFigure(t *testing.T) {
	upstream := newUpstream(t)
	texts := []string{"Call mom about her birthday on Sunday", "asdf qwerty zxcv", "Idea: a garden planner app"}
	type process struct {
		recv *telemetrytest.Receiver
		s    *stack
	}
	run := func(shadow bool) process {
		recv := telemetrytest.NewReceiver(t)
		s := newStack(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()})
		if shadow {
			s.tel.DeclareShadow(candidateVersion)
		}
		var wg sync.WaitGroup
		for i, text := range texts {
			filed := s.capture(text, nil)
			prod := *s.itemOf(filed).AgentRun
			if shadow {
				wg.Go(func() {
					runShadow(t, s.tel, upstream, context.Background(), prod.Trace(), fmt.Sprintf("shadow_%d", i), 30)
				})
			}
			c := brainwire.Correction{Kind: brainwire.CorrectionRecategorize, UserID: "alice", ItemID: "item", Run: prod, Bucket: "Projects"}
			if shadow {
				c.Shadow = &brainwire.ShadowTrial{Production: prod, Candidate: brainwire.AgentRun{
					RunID: "shadow", AgentVersion: candidateVersion, Outcome: brainwire.OutcomeClassified, Bucket: "Projects"}}
			}
			s.tel.Correction(t.Context(), c)
			c.Repeat, c.Bucket = true, "Admin" // a second thought scores no arm
			s.tel.Correction(t.Context(), c)
		}
		wg.Wait()
		if shadow {
			trial := func(cand, prod brainwire.Outcome, candBucket, prodBucket string) brainwire.ShadowTrial {
				return brainwire.ShadowTrial{
					Candidate:  brainwire.AgentRun{AgentVersion: candidateVersion, Outcome: cand, Bucket: candBucket},
					Production: brainwire.AgentRun{AgentVersion: "sha256:production", Outcome: prod, Bucket: prodBucket},
				}
			}
			for _, tr := range []brainwire.ShadowTrial{
				trial(brainwire.OutcomeClassified, brainwire.OutcomeClassified, "Ideas", "Ideas"),
				trial(brainwire.OutcomeLowConfidence, brainwire.OutcomeClassified, "Ideas", "Ideas"),
				trial(brainwire.OutcomeMisunderstood, brainwire.OutcomeMisunderstood, "People", "Admin"),
				trial(brainwire.OutcomeClassified, brainwire.OutcomeLowConfidence, "Projects", "People"),
				trial(brainwire.OutcomeUnresolved, brainwire.OutcomeClassified, "", "People"),
				trial(brainwire.OutcomeMisunderstood, brainwire.OutcomeClassified, "People", "People"),
			} {
				s.tel.ShadowKept(t.Context(), tr)
			}
			for _, r := range []string{brainwire.ShadowBusy, brainwire.ShadowBusy, brainwire.ShadowThrottled} {
				s.tel.ShadowDropped(t.Context(), r)
			}
		}
		if err := s.shutdown(10e9); err != nil {
			t.Fatalf("flush: %v", err)
		}
		return process{recv, s}
	}
	without, with := run(false), run(true)

	before, after := productionPoints(without.recv), productionPoints(with.recv)
	if len(before) == 0 {
		t.Fatal("no production data points")
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s without a shadow, %q with", k, v, after[k])
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s = %s only with a shadow", k, v)
		}
	}
	for _, name := range []string{telemetry.MetricShadowTrials, telemetry.MetricShadowDropped, telemetry.MetricShadowScored} {
		if without.recv.Metric(name) != nil {
			t.Errorf("%s exported by a process without a shadow", name)
		}
	}

	trials := with.recv.Metric(telemetry.MetricShadowTrials)
	for _, c := range []struct {
		cand, prod string
		agree      bool
		want       int64
	}{
		{"Ideas", "Ideas", true, 2},
		{"", "", true, 1}, // both asked the person, whatever they guessed
		{"Projects", "People", false, 1},
		{"", "People", false, 2}, // unresolved, or misunderstood with the right guess
		{"Admin", "Admin", true, 0},
	} {
		want := map[string]any{"brainwire.shadow.version": candidateVersion, "brainwire.shadow.candidate_bucket": c.cand,
			"brainwire.shadow.production_bucket": c.prod, "brainwire.shadow.agree": c.agree}
		if c.want > 0 {
			want["gen_ai.agent.version"] = "sha256:production"
		}
		if got := counterValue(trials, want); got != c.want {
			t.Errorf("trials %s/%s agree=%v: %d, want %d", c.cand, c.prod, c.agree, got, c.want)
		}
	}
	if declared := len(trials.GetSum().GetDataPoints()); declared < 25 {
		t.Errorf("%d trial series, want every pair of buckets declared", declared)
	}
	dropped := with.recv.Metric(telemetry.MetricShadowDropped)
	for reason, want := range map[string]int64{"busy": 2, "throttled": 1, "timeout": 0, "draining": 0, "failed": 0} {
		pts := 0
		for _, dp := range dropped.GetSum().GetDataPoints() {
			if telemetrytest.Attr(dp.Attributes, "reason") == reason {
				pts++
			}
		}
		if got := counterValue(dropped, map[string]any{"reason": reason}); got != want || pts != 1 {
			t.Errorf("dropped %s: %d in %d series, want %d in one", reason, got, pts, want)
		}
	}
	// The candidate filed every capture in Projects, where the person put
	// it; production filed none of the three there.
	scored := with.recv.Metric(telemetry.MetricShadowScored)
	for _, c := range []struct {
		arm     string
		correct bool
		want    int64
	}{{"candidate", true, 3}, {"candidate", false, 0}, {"production", true, 0}, {"production", false, 3}} {
		want := map[string]any{"brainwire.shadow.version": candidateVersion, "brainwire.shadow.arm": c.arm, "brainwire.shadow.correct": c.correct}
		if got := counterValue(scored, want); got != c.want {
			t.Errorf("scored %s correct=%v: %d, want %d", c.arm, c.correct, got, c.want)
		}
	}
}
