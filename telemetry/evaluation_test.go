package telemetry_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// call makes an API request with the stack's key, decodes the JSON
// answer into out (if set) and returns the answer.
func (s *stack) call(method, path, body string, out any) []byte {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}

// itemOf returns the inbox item a capture filed.
func (s *stack) itemOf(r result) brainwire.InboxItem {
	s.t.Helper()
	var id string
	for _, e := range r.events {
		if v, ok := e["value"].(map[string]any); ok {
			id, _ = v["inboxItemId"].(string)
		}
	}
	var it brainwire.InboxItem
	s.call("GET", "/api/inbox/"+id, "", &it)
	return it
}

func findSpan(t *testing.T, recv *telemetrytest.Receiver, name, key, value string) *telemetrytest.Span {
	t.Helper()
	for _, s := range recv.Spans() {
		if s.Name == name && attr(s, key) == value {
			return s
		}
	}
	t.Fatalf("no span %q with %s=%s among %d spans", name, key, value, len(recv.Spans()))
	return nil
}

func eventAttrs(t *testing.T, s *telemetrytest.Span, name string) map[string]any {
	t.Helper()
	for _, ev := range s.Events {
		if ev.Name == name {
			out := map[string]any{}
			for _, kv := range ev.Attributes {
				out[kv.Key] = telemetrytest.Attr(ev.Attributes, kv.Key)
			}
			return out
		}
	}
	t.Fatalf("span %s has no %s event", s.Name, name)
	return nil
}

// counterValue sums a counter's points whose attributes include want.
func counterValue(m *metricspb.Metric, want map[string]any) int64 {
	var n int64
	for _, dp := range m.GetSum().GetDataPoints() {
		if telemetrytest.HasAttrs(dp.Attributes, want) {
			n += dp.GetAsInt()
		}
	}
	return n
}

// TestCorrectionsAreEvaluationsOfTheRun is the tuning loop's ground truth
// end to end: a capture, the person's recategorize, and a misunderstood
// capture resolved by a follow-up, through the real server with telemetry
// exporting to an in-process OTLP receiver and Application Insights
// ingestion endpoint. Each correction must arrive as an evaluation span in
// its own trace, linked to the invoke_agent span of the run it judges,
// with a gen_ai.evaluation.result event; as an Application Insights custom
// event in that run's operation; and in the corrections and follow-ups
// counters by agent version.
func TestCorrectionsAreEvaluationsOfTheRun(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	ingest := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
	s := newStack(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           recv.Endpoint(),
		"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString(),
	})
	agent, err := s.srv.RefreshAgent(t.Context())
	if err != nil || agent.Version == "" {
		t.Fatalf("agent %+v, %v", agent, err)
	}

	filed := s.capture("Call mom about her birthday on Sunday", nil)
	item := s.itemOf(filed)
	if item.AgentRun == nil || item.AgentRun.TraceID == "" || item.AgentRun.SpanID == "" || item.AgentRun.AgentVersion != agent.Version {
		t.Fatalf("filed item's run %+v", item.AgentRun)
	}
	// A person's second thought on the same item is a repeat, so that
	// the share of filed items people corrected counts each item once.
	s.call("PATCH", "/api/inbox/"+item.ID+"/recategorize", `{"bucket":"Ideas"}`, nil)
	s.call("PATCH", "/api/inbox/"+item.ID+"/recategorize", `{"bucket":"Admin"}`, nil)

	asked := s.capture("asdf qwerty zxcv", nil)
	askedItem := s.itemOf(asked)
	body, _ := json.Marshal(map[string]any{"inbox_item_id": askedItem.ID, "follow_up_text": "I meant: call my friend Sam about his birthday", "follow_up_round": 1})
	stream := s.call("POST", "/api/capture/follow-up", string(body), nil)
	if !strings.Contains(string(stream), `"CLASSIFIED"`) {
		t.Fatalf("follow-up: %s", stream)
	}
	followUp := result{runID: lastRunID(stream)}
	if err := s.shutdown(10e9); err != nil {
		t.Fatalf("flush: %v", err)
	}

	t.Run("recategorize", func(t *testing.T) {
		run := findAgentSpan(t, recv, filed.runID)
		if got := spanID(run.SpanId); got != item.AgentRun.SpanID || hex.EncodeToString(run.TraceId) != item.AgentRun.TraceID {
			t.Fatalf("item records span %s/%s, the run's span is %s/%s", item.AgentRun.TraceID, item.AgentRun.SpanID,
				hex.EncodeToString(run.TraceId), got)
		}
		ev := findSpan(t, recv, "evaluation human_bucket", "brainwire.correction.human_bucket", "Ideas")
		if hex.EncodeToString(ev.TraceId) == hex.EncodeToString(run.TraceId) {
			t.Error("the evaluation is in the run's own trace, want the correction's")
		}
		if len(ev.Links) != 1 || hex.EncodeToString(ev.Links[0].TraceId) != item.AgentRun.TraceID || spanID(ev.Links[0].SpanId) != item.AgentRun.SpanID {
			t.Fatalf("links %v, want one to the run's span", ev.Links)
		}
		want := map[string]any{
			"gen_ai.evaluation.name":        "human_bucket",
			"gen_ai.evaluation.score.label": "incorrect",
			"gen_ai.evaluation.score.value": 0.0,
			"gen_ai.evaluation.explanation": "People -> Ideas",
			"run_id":                        filed.runID,
		}
		got := eventAttrs(t, ev, "gen_ai.evaluation.result")
		for k, v := range want {
			if got[k] != v {
				t.Errorf("event %s = %v, want %v", k, got[k], v)
			}
		}
		for k, v := range map[string]any{"gen_ai.agent.version": agent.Version, "brainwire.correction.agent_bucket": "People", "run_id": filed.runID,
			"brainwire.correction.human_bucket": "Ideas", "brainwire.inbox_item_id": item.ID, "brainwire.correction.kind": "recategorize",
			"brainwire.correction.repeat": false} {
			if attr(ev, k) != v {
				t.Errorf("span %s = %v, want %v", k, attr(ev, k), v)
			}
		}
		// The correction's trace is the recategorize request's.
		var names []string
		for _, sp := range recv.Trace(hex.EncodeToString(ev.TraceId)) {
			names = append(names, sp.Name)
		}
		if !strings.Contains(strings.Join(names, ","), "PATCH /api/inbox/{id}/recategorize") {
			t.Errorf("evaluation trace %v: want it under the recategorize request's span", names)
		}

		events := ingest.Events("gen_ai.evaluation.result")
		var ai *telemetrytest.Envelope
		for i := range events {
			if p := events[i].Data.BaseData.Properties; p["run_id"] == filed.runID && p["human_bucket"] == "Ideas" {
				ai = &events[i]
			}
		}
		if ai == nil {
			t.Fatalf("no Application Insights evaluation event for %s among %d", filed.runID, len(events))
		}
		if ai.Tags["ai.operation.id"] != item.AgentRun.TraceID || ai.Tags["ai.operation.parentId"] != item.AgentRun.SpanID {
			t.Errorf("event operation %s/%s, want the run's %s/%s", ai.Tags["ai.operation.id"], ai.Tags["ai.operation.parentId"],
				item.AgentRun.TraceID, item.AgentRun.SpanID)
		}
		p := ai.Data.BaseData.Properties
		if p["gen_ai.evaluation.name"] != "human_bucket" || p["gen_ai.evaluation.score.label"] != "incorrect" ||
			p["agent_version"] != agent.Version || p["human_bucket"] != "Ideas" || p["agent_bucket"] != "People" {
			t.Errorf("event properties %v", p)
		}
		if v, ok := ai.Data.BaseData.Measurements["gen_ai.evaluation.score.value"]; !ok || v != 0 {
			t.Errorf("measurements %v", ai.Data.BaseData.Measurements)
		}
		// And the run's own request item names the version.
		for _, r := range ingest.RequestItems() {
			if r.Data.BaseData.Properties["run_id"] == filed.runID && r.Data.BaseData.Properties["agent_version"] != agent.Version {
				t.Errorf("request item properties %v", r.Data.BaseData.Properties)
			}
		}

		if attr(findSpan(t, recv, "evaluation human_bucket", "brainwire.correction.human_bucket", "Admin"), "brainwire.correction.repeat") != true {
			t.Error("the second recategorize is not a repeat")
		}
		m := recv.Metric("brainwire.corrections")
		if n := counterValue(m, map[string]any{"brainwire.correction.agent_bucket": "People", "brainwire.correction.human_bucket": "Ideas",
			"brainwire.correction.agent_outcome": "classified", "gen_ai.evaluation.score.label": "incorrect", "gen_ai.agent.version": agent.Version,
			"brainwire.correction.repeat": false}); n != 1 {
			t.Errorf("brainwire.corrections People -> Ideas = %d, want 1", n)
		}
		if n := counterValue(m, map[string]any{"brainwire.correction.human_bucket": "Admin", "brainwire.correction.repeat": true}); n != 1 {
			t.Errorf("brainwire.corrections repeated to Admin = %d, want 1", n)
		}
		if n := counterValue(m, map[string]any{}); n != 2 {
			t.Errorf("brainwire.corrections in all = %d, want 2", n)
		}
	})

	t.Run("follow-up", func(t *testing.T) {
		run := findAgentSpan(t, recv, asked.runID)
		ev := findSpan(t, recv, "evaluation follow_up_resolution", "run_id", asked.runID)
		if len(ev.Links) != 1 || spanID(ev.Links[0].SpanId) != spanID(run.SpanId) {
			t.Fatalf("links %v, want one to the run that asked", ev.Links)
		}
		got := eventAttrs(t, ev, "gen_ai.evaluation.result")
		if got["gen_ai.evaluation.score.label"] != "resolved" || got["gen_ai.evaluation.score.value"] != 1.0 ||
			!strings.HasSuffix(str(got["gen_ai.evaluation.explanation"]), "-> People after follow-up round 1") {
			t.Errorf("event %v", got)
		}
		if attr(ev, "brainwire.follow_up.run_id") != followUp.runID || attr(ev, "brainwire.follow_up.round") != int64(1) {
			t.Errorf("span attributes %v", ev.Attributes)
		}
		// It hangs under the follow-up request, in the follow-up's trace.
		fu := findAgentSpan(t, recv, followUp.runID)
		if hex.EncodeToString(fu.TraceId) != hex.EncodeToString(ev.TraceId) {
			t.Error("the follow-up's evaluation is not in the follow-up's trace")
		}
		m := recv.Metric("brainwire.follow_ups")
		if n := counterValue(m, map[string]any{"brainwire.follow_up.round": int64(1), "brainwire.follow_up.outcome": "classified",
			"gen_ai.agent.version": agent.Version}); n != 1 {
			t.Errorf("brainwire.follow_ups round 1 classified = %d, want 1", n)
		}
	})

	t.Run("readable reasoning", func(t *testing.T) {
		run := findAgentSpan(t, recv, filed.runID)
		for k, v := range map[string]any{"gen_ai.agent.version": agent.Version, "gen_ai.request.model": simulator.DefaultModel} {
			if attr(run, k) != v {
				t.Errorf("%s = %v, want %v", k, attr(run, k), v)
			}
		}
		var sys []map[string]any
		if err := json.Unmarshal([]byte(str(attr(run, "gen_ai.system_instructions"))), &sys); err != nil || len(sys) != 1 ||
			sys[0]["type"] != "text" || sys[0]["content"] != simulator.DefaultInstructions {
			t.Errorf("gen_ai.system_instructions %v (%v)", attr(run, "gen_ai.system_instructions"), err)
		}
		var want strings.Builder
		for _, c := range s.chunks.get(filed.runID) {
			want.WriteString(c.Text)
		}
		out := outputText(t, run)
		if out.text != want.String() || out.truncated || out.finish != "stop" || out.role != "assistant" {
			t.Errorf("assembled reasoning %+v\nwant %q", out, want.String())
		}
		if attr(run, "brainwire.capture.reasoning_truncated") != nil {
			t.Error("a short run is marked truncated")
		}
		// Every chunk is still its own event.
		n := 0
		for _, e := range run.Events {
			if e.Name == "reasoning.chunk" {
				n++
			}
		}
		if n != len(s.chunks.get(filed.runID)) {
			t.Errorf("%d chunk events, want %d", n, len(s.chunks.get(filed.runID)))
		}
	})
}

type output struct {
	role, text, finish string
	truncated          bool
}

// outputText reads gen_ai.output.messages.
func outputText(t *testing.T, s *telemetrytest.Span) output {
	t.Helper()
	var msgs []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type      string `json:"type"`
			Content   string `json:"content"`
			Truncated bool   `json:"truncated"`
		} `json:"parts"`
		FinishReason string `json:"finish_reason"`
	}
	raw := str(attr(s, "gen_ai.output.messages"))
	if err := json.Unmarshal([]byte(raw), &msgs); err != nil || len(msgs) != 1 || len(msgs[0].Parts) != 1 || msgs[0].Parts[0].Type != "text" {
		t.Fatalf("gen_ai.output.messages %q: %v", raw, err)
	}
	return output{role: msgs[0].Role, text: msgs[0].Parts[0].Content, finish: msgs[0].FinishReason, truncated: msgs[0].Parts[0].Truncated}
}

// lastRunID is the runId of a stream's COMPLETE.
func lastRunID(stream []byte) string {
	i := bytes.LastIndex(stream, []byte(`"runId":"`))
	if i < 0 {
		return ""
	}
	rest := stream[i+len(`"runId":"`):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// TestReasoningOnTheSpanIsCappedAndSwitchable checks the assembled
// reasoning's cap (cut on a character boundary and marked truncated) and
// that a cap of 0 assembles none (TestContentOff: content off records
// none either), but the version stays.
func TestReasoningOnTheSpanIsCappedAndSwitchable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		present bool
		cap     int
	}{
		{"capped", map[string]string{"BRAINWIRE_REASONING_MAX_BYTES": "301"}, true, 301},
		{"assembly off", map[string]string{"BRAINWIRE_REASONING_MAX_BYTES": "0"}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := telemetrytest.NewReceiver(t)
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()}
			for k, v := range tc.env {
				env[k] = v
			}
			s := newStack(t, env)
			agent, err := s.srv.RefreshAgent(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// Multibyte text, so that a cut can land inside a character.
			r := s.capture("Déjeuner avec ma sœur Zoë — call mom about her birthday #long:200", nil)
			if err := s.shutdown(10e9); err != nil {
				t.Fatal(err)
			}
			run := findAgentSpan(t, recv, r.runID)
			if attr(run, "gen_ai.agent.version") != agent.Version {
				t.Errorf("version %v, want %s whatever the content switch", attr(run, "gen_ai.agent.version"), agent.Version)
			}
			if !tc.present {
				if attr(run, "gen_ai.output.messages") != nil {
					t.Error("assembled reasoning recorded")
				}
				return
			}
			out := outputText(t, run)
			var all strings.Builder
			for _, c := range s.chunks.get(r.runID) {
				all.WriteString(c.Text)
			}
			if !out.truncated || attr(run, "brainwire.capture.reasoning_truncated") != true {
				t.Errorf("not marked truncated: %+v", out)
			}
			if len(out.text) > tc.cap || len(out.text) < tc.cap-3 || !utf8.ValidString(out.text) || !strings.HasPrefix(all.String(), out.text) {
				t.Errorf("cut to %d bytes (valid UTF-8 %v), want a prefix of at most %d: %q", len(out.text), utf8.ValidString(out.text), tc.cap, out.text)
			}
		})
	}
}
