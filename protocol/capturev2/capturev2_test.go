package capturev2

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

func TestEncodeMatchesContract(t *testing.T) {
	cases := []struct {
		name string
		ev   brainwire.CaptureEvent
		want string
	}{
		{"step start", brainwire.CaptureEvent{Type: brainwire.CaptureStepStart, StepName: "Classifying"},
			`{"type":"STEP_START","stepName":"Classifying"}`},
		{"step end", brainwire.CaptureEvent{Type: brainwire.CaptureStepEnd, StepName: "Processing"},
			`{"type":"STEP_END","stepName":"Processing"}`},
		{"classified", brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, InboxItemID: "i1", Bucket: "People", Confidence: 0.9}},
			`{"type":"CLASSIFIED","value":{"inboxItemId":"i1","bucket":"People","confidence":0.9}}`},
		{"low confidence", brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, InboxItemID: "i2", Bucket: "Ideas", Confidence: 0.4}},
			`{"type":"LOW_CONFIDENCE","value":{"inboxItemId":"i2","bucket":"Ideas","confidence":0.4}}`},
		{"misunderstood", brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, ThreadID: "thread-1", Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeMisunderstood, InboxItemID: "i3", Question: "Did you mean \"Bob\"?", UpstreamThreadID: "thread_abc"}},
			`{"type":"MISUNDERSTOOD","value":{"threadId":"thread-1","inboxItemId":"i3","questionText":"Did you mean \"Bob\"?","foundryConversationId":"thread_abc"}}`},
		{"unresolved", brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeUnresolved}},
			`{"type":"UNRESOLVED","value":{"inboxItemId":""}}`},
		{"error", brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "Agent run failed", Code: brainwire.EUpstream,
			Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: "server_error"}},
			`{"type":"ERROR","message":"Agent run failed","code":"upstream"}`},
		{"sign-in error", brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "brainwire could not sign in to the agent service", Code: brainwire.EUpstreamAuth},
			`{"type":"ERROR","message":"brainwire could not sign in to the agent service","code":"upstream_auth"}`},
		{"busy", brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "The agent service is busy; try again later", Code: brainwire.EBusy, RetryAfter: 3600 * time.Second},
			`{"type":"ERROR","message":"The agent service is busy; try again later","code":"busy","retryAfterSeconds":3600}`},
		{"busy, a part of a second asked", brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "The agent service is busy; try again later", Code: brainwire.EBusy, RetryAfter: 40 * time.Millisecond},
			`{"type":"ERROR","message":"The agent service is busy; try again later","code":"busy","retryAfterSeconds":1}`},
		{"busy, nothing asked", brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "The agent service is busy; try again later", Code: brainwire.EBusy},
			`{"type":"ERROR","message":"The agent service is busy; try again later","code":"busy"}`},
		{"complete", brainwire.CaptureEvent{Type: brainwire.CaptureComplete, ThreadID: "thread-1", RunID: "run-1"},
			`{"type":"COMPLETE","threadId":"thread-1","runId":"run-1"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(Encoder{}.Encode(nil, c.ev))
			if got != "data: "+c.want+"\n\n" {
				t.Fatalf("got  %q\nwant %q", got, "data: "+c.want+"\n\n")
			}
			if !json.Valid([]byte(c.want)) {
				t.Fatalf("expected payload is not JSON: %s", c.want)
			}
		})
	}
}

func TestEncodeNeverWritesReasoning(t *testing.T) {
	ev := brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{Text: "secret thought"}}
	if got := (Encoder{}).Encode([]byte("x"), ev); string(got) != "x" {
		t.Fatalf("reasoning produced bytes: %q", got)
	}
}

func TestEncodeIsOneLineAndFramed(t *testing.T) {
	ev := brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: "line one\nline two\r\n\u2028"}
	got := string(Encoder{}.Encode(nil, ev))
	body := strings.TrimSuffix(strings.TrimPrefix(got, "data: "), "\n\n")
	if strings.ContainsAny(body, "\r\n") {
		t.Fatalf("payload spans lines: %q", got)
	}
	var v struct{ Message string }
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Message != ev.Message {
		t.Fatalf("payload %q decodes to %q, %v", body, v.Message, err)
	}
}
