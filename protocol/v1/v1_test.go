package v1

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

func frames(t *testing.T, stream string) []string {
	t.Helper()
	if !strings.HasSuffix(stream, "\n\n") || strings.Contains(stream, "\r") {
		t.Fatalf("stream is not LF-framed: %q", stream)
	}
	var out []string
	for _, f := range strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n\n") {
		p, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.Contains(p, "\n") || !json.Valid([]byte(p)) {
			t.Fatalf("frame is not one data line of JSON: %q", f)
		}
		out = append(out, p)
	}
	return out
}

func TestEncodeSequences(t *testing.T) {
	c := brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"}
	start := brainwire.CaptureEvent{Type: brainwire.CaptureStepStart, StepName: "Classifying"}
	end := brainwire.CaptureEvent{Type: brainwire.CaptureStepEnd, StepName: "Classifying"}
	done := brainwire.CaptureEvent{Type: brainwire.CaptureComplete, ThreadID: "thread-1", RunID: "run-1"}
	outcome := func(r brainwire.CaptureResult) brainwire.CaptureEvent {
		return brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &r, ThreadID: "thread-1", RunID: "run-1"}
	}
	// What the phone does not see in v1.
	noise := []brainwire.CaptureEvent{
		{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{Text: "secret thought"}},
		{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{Text: "closing words", AfterOutcome: true}},
		{Type: brainwire.CaptureToolCall, Tool: &brainwire.ToolCall{ID: "c1", Name: "file_capture"}},
		{Type: brainwire.CaptureToolResult, Tool: &brainwire.ToolCall{ID: "c1"}, ToolResult: &brainwire.ToolResult{Output: "{}"}},
	}
	runStarted := `{"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1"}`
	stepStarted := `{"type":"STEP_STARTED","stepName":"Classifying"}`
	stepFinished := `{"type":"STEP_FINISHED","stepName":"Classifying"}`
	runFinished := `{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1"}`
	text := func(s string) []string {
		return []string{
			`{"type":"TEXT_MESSAGE_START","messageId":"run-1-result","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-1-result","delta":"` + s + `"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"run-1-result"}`,
		}
	}
	cases := []struct {
		name string
		evs  []brainwire.CaptureEvent
		want []string
	}{
		{"classified", []brainwire.CaptureEvent{start, end, outcome(brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, InboxItemID: "i1", Bucket: "People", Confidence: 0.9}), done},
			slices.Concat([]string{runStarted, stepStarted, stepFinished}, text("Filed → People (0.90)"),
				[]string{`{"type":"CUSTOM","name":"CLASSIFIED","value":{"inboxItemId":"i1","bucket":"People","confidence":0.9}}`, runFinished})},
		{"low confidence asks which bucket", []brainwire.CaptureEvent{start, end, outcome(brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, InboxItemID: "i2", Bucket: "Ideas", Confidence: 0.4}), done},
			slices.Concat([]string{runStarted, stepStarted, stepFinished}, text("Filed (needs review) → Ideas (0.40)"),
				[]string{`{"type":"CUSTOM","name":"HITL_REQUIRED","value":{"threadId":"thread-1","inboxItemId":"i2","questionText":"Which bucket does this belong in? Best guess: Ideas (0.40)","bucket":"Ideas","confidence":0.4}}`, runFinished})},
		{"misunderstood", []brainwire.CaptureEvent{start, end, outcome(brainwire.CaptureResult{Outcome: brainwire.OutcomeMisunderstood, InboxItemID: "i3", Question: "Who is \"Sam\"?"}), done},
			slices.Concat([]string{runStarted, stepStarted, stepFinished}, text(`Who is \"Sam\"?`),
				[]string{`{"type":"CUSTOM","name":"MISUNDERSTOOD","value":{"threadId":"thread-1","inboxItemId":"i3","questionText":"Who is \"Sam\"?"}}`, runFinished})},
		{"unresolved", []brainwire.CaptureEvent{start, end, outcome(brainwire.CaptureResult{Outcome: brainwire.OutcomeUnresolved}), done},
			slices.Concat([]string{runStarted, stepStarted, stepFinished}, text(UnresolvedText),
				[]string{`{"type":"CUSTOM","name":"UNRESOLVED","value":{"inboxItemId":""}}`, runFinished})},
		{"failure ends with RUN_ERROR and its code", []brainwire.CaptureEvent{start, {Type: brainwire.CaptureError, Message: "The agent run failed", Code: brainwire.EUpstream,
			Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: "server_error"}}, done},
			[]string{runStarted, stepStarted, `{"type":"RUN_ERROR","message":"The agent run failed","code":"upstream"}`}},
		{"sign-in failure", []brainwire.CaptureEvent{start, {Type: brainwire.CaptureError, Message: "brainwire could not sign in to the agent service", Code: brainwire.EUpstreamAuth}, done},
			[]string{runStarted, stepStarted, `{"type":"RUN_ERROR","message":"brainwire could not sign in to the agent service","code":"upstream_auth"}`}},
		{"busy", []brainwire.CaptureEvent{start, {Type: brainwire.CaptureError, Message: "The agent service is busy; try again later", Code: brainwire.EBusy, RetryAfter: 90 * time.Second}, done},
			[]string{runStarted, stepStarted, `{"type":"RUN_ERROR","message":"The agent service is busy; try again later","code":"busy","retryAfterSeconds":90}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEncoder(c)
			var dst []byte
			for i, ev := range tc.evs {
				if i == 1 {
					for _, n := range noise {
						dst = e.Encode(dst, n)
					}
				}
				dst = e.Encode(dst, ev)
			}
			got := frames(t, string(dst))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if strings.Contains(string(dst), "secret") || strings.Contains(string(dst), "closing words") || strings.Contains(string(dst), "file_capture") {
				t.Fatalf("v1 stream shows reasoning or tools: %s", dst)
			}
		})
	}
}

func TestNothingAfterTheEnd(t *testing.T) {
	e := NewEncoder(brainwire.Capture{ThreadID: "t", RunID: "r"})
	dst := e.Encode(nil, brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "x"})
	n := len(dst)
	dst = e.Encode(dst, brainwire.CaptureEvent{Type: brainwire.CaptureComplete})
	dst = e.Encode(dst, brainwire.CaptureEvent{Type: brainwire.CaptureStepEnd, StepName: "s"})
	if len(dst) != n {
		t.Fatalf("frames after RUN_ERROR: %q", dst[n:])
	}
}
