package agui

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/agui/aguitest"
)

var capture = brainwire.Capture{Kind: brainwire.KindText, ThreadID: "t-1", RunID: "r-1"}

func step(typ brainwire.CaptureEventType) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: typ, StepName: "Classifying"}
}

func chunk(i int, text string, after bool) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{RunID: "r-1", Index: i, Text: text, AfterOutcome: after}}
}

func call(id, name, args string) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureToolCall, Tool: &brainwire.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}}
}

func result(id, name, output string, isErr bool) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureToolResult, Tool: &brainwire.ToolCall{ID: id, Name: name},
		ToolResult: &brainwire.ToolResult{CallID: id, Name: name, Output: output, IsError: isErr}}
}

func outcomeEv(r brainwire.CaptureResult) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &r, ThreadID: "t-1", RunID: "r-1"}
}

func complete() brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureComplete, ThreadID: "t-1", RunID: "r-1"}
}

// failure is an Error as the adapter makes it: the clients' code apart
// from the cause telemetry keeps (typ).
func failure(msg, code, typ string) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: msg, Code: code,
		Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: typ, ErrorMessage: msg}}
}

func encode(c brainwire.Capture, opts Options, evs ...brainwire.CaptureEvent) string {
	e := NewEncoder(c, opts)
	var dst []byte
	for _, ev := range evs {
		dst = e.Encode(dst, ev)
	}
	return string(dst)
}

func payloads(t *testing.T, stream string) []string {
	t.Helper()
	frames, err := aguitest.Frames(stream)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

var filedPeople = `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`

func TestEncodeSequences(t *testing.T) {
	classified := brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, InboxItemID: "i1", Bucket: "People", Confidence: 0.9}
	cases := []struct {
		name string
		c    brainwire.Capture
		opts Options
		evs  []brainwire.CaptureEvent
		want []string
	}{
		{"classified: tool call, outcome, closing words; reasoning left out", capture, Options{}, []brainwire.CaptureEvent{
			step(brainwire.CaptureStepStart), chunk(0, "Mom is a person.", false),
			call("c1", "file_capture", `{"bucket":"People"}`), result("c1", "file_capture", filedPeople, false),
			step(brainwire.CaptureStepEnd), outcomeEv(classified), chunk(1, "Filed", true), chunk(2, " to People.", true), complete(),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Classifying"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"file_capture"}`,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"bucket\":\"People\"}"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"c1-result","toolCallId":"c1","content":"{\"bucket\":\"People\",\"confidence\":0.9,\"item_id\":\"i1\",\"status\":\"classified\"}","role":"tool"}`,
			`{"type":"STEP_FINISHED","stepName":"Classifying"}`,
			`{"type":"CUSTOM","name":"brainwire.outcome","value":{"outcome":"classified","inboxItemId":"i1","bucket":"People","confidence":0.9}}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"r-1-text-1","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"r-1-text-1","delta":"Filed"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"r-1-text-1","delta":" to People."}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"r-1-text-1"}`,
			`{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1","result":{"outcome":"classified","inboxItemId":"i1","bucket":"People","confidence":0.9}}`,
		}},
		{"reasoning when asked, chunk for chunk, closed around each tool call; state too", capture, Options{Reasoning: true, State: true}, []brainwire.CaptureEvent{
			step(brainwire.CaptureStepStart), chunk(0, "Bad", false), chunk(1, " bucket.", false),
			call("c1", "file_capture", `{}`), result("c1", "file_capture", `{"error":"invalid_bucket"}`, true),
			chunk(2, "Retry.", false),
			call("c2", "file_capture", ``), result("c2", "file_capture", filedPeople, false),
			step(brainwire.CaptureStepEnd), outcomeEv(classified), complete(),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Classifying"}`,
			`{"type":"REASONING_START","messageId":"r-1-reasoning-1"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r-1-reasoning-1","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r-1-reasoning-1","delta":"Bad"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r-1-reasoning-1","delta":" bucket."}`,
			`{"type":"REASONING_MESSAGE_END","messageId":"r-1-reasoning-1"}`,
			`{"type":"REASONING_END","messageId":"r-1-reasoning-1"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"file_capture"}`,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{}"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"c1-result","toolCallId":"c1","content":"{\"error\":\"invalid_bucket\"}","role":"tool"}`,
			`{"type":"REASONING_START","messageId":"r-1-reasoning-2"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r-1-reasoning-2","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r-1-reasoning-2","delta":"Retry."}`,
			`{"type":"REASONING_MESSAGE_END","messageId":"r-1-reasoning-2"}`,
			`{"type":"REASONING_END","messageId":"r-1-reasoning-2"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"file_capture"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c2"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"c2-result","toolCallId":"c2","content":"{\"bucket\":\"People\",\"confidence\":0.9,\"item_id\":\"i1\",\"status\":\"classified\"}","role":"tool"}`,
			`{"type":"STEP_FINISHED","stepName":"Classifying"}`,
			`{"type":"CUSTOM","name":"brainwire.outcome","value":{"outcome":"classified","inboxItemId":"i1","bucket":"People","confidence":0.9}}`,
			`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/capture","value":{"outcome":"classified","inboxItemId":"i1","bucket":"People","confidence":0.9}}]}`,
			`{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1","result":{"outcome":"classified","inboxItemId":"i1","bucket":"People","confidence":0.9}}`,
		}},
		{"misunderstood: the question is an assistant message, the round is in the outcome",
			brainwire.Capture{Kind: brainwire.KindFollowUp, ThreadID: "t-1", RunID: "r-1", FollowUp: &brainwire.FollowUp{Round: 2}}, Options{State: true},
			[]brainwire.CaptureEvent{
				step(brainwire.CaptureStepStart), step(brainwire.CaptureStepEnd),
				outcomeEv(brainwire.CaptureResult{Outcome: brainwire.OutcomeMisunderstood, InboxItemID: "i3", Confidence: 0.2, Question: "Who is \"Sam\"?"}),
				chunk(0, "Not filed yet.", true), complete(),
			}, []string{
				`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
				`{"type":"STEP_STARTED","stepName":"Classifying"}`,
				`{"type":"STEP_FINISHED","stepName":"Classifying"}`,
				`{"type":"CUSTOM","name":"brainwire.outcome","value":{"outcome":"misunderstood","inboxItemId":"i3","confidence":0.2,"questionText":"Who is \"Sam\"?","followUpRound":2}}`,
				`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/capture","value":{"outcome":"misunderstood","inboxItemId":"i3","confidence":0.2,"questionText":"Who is \"Sam\"?","followUpRound":2}}]}`,
				`{"type":"TEXT_MESSAGE_START","messageId":"r-1-text-1","role":"assistant"}`,
				`{"type":"TEXT_MESSAGE_CONTENT","messageId":"r-1-text-1","delta":"Who is \"Sam\"?"}`,
				`{"type":"TEXT_MESSAGE_END","messageId":"r-1-text-1"}`,
				`{"type":"TEXT_MESSAGE_START","messageId":"r-1-text-2","role":"assistant"}`,
				`{"type":"TEXT_MESSAGE_CONTENT","messageId":"r-1-text-2","delta":"Not filed yet."}`,
				`{"type":"TEXT_MESSAGE_END","messageId":"r-1-text-2"}`,
				`{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1","result":{"outcome":"misunderstood","inboxItemId":"i3","confidence":0.2,"questionText":"Who is \"Sam\"?","followUpRound":2}}`,
			}},
		{"unresolved: no item, no confidence", capture, Options{}, []brainwire.CaptureEvent{
			step(brainwire.CaptureStepStart), chunk(0, "People.", false), step(brainwire.CaptureStepEnd),
			outcomeEv(brainwire.CaptureResult{Outcome: brainwire.OutcomeUnresolved}), complete(),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Classifying"}`,
			`{"type":"STEP_FINISHED","stepName":"Classifying"}`,
			`{"type":"CUSTOM","name":"brainwire.outcome","value":{"outcome":"unresolved"}}`,
			`{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1","result":{"outcome":"unresolved"}}`,
		}},
		{"failure: RUN_ERROR with the clients' code ends the run; nothing follows", capture, Options{Reasoning: true}, []brainwire.CaptureEvent{
			step(brainwire.CaptureStepStart), chunk(0, "Hm", false),
			failure("The agent run failed: boom", brainwire.EUpstream, "server_error"), complete(), chunk(1, "late", true),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Classifying"}`,
			`{"type":"REASONING_START","messageId":"r-1-reasoning-1"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r-1-reasoning-1","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r-1-reasoning-1","delta":"Hm"}`,
			`{"type":"REASONING_MESSAGE_END","messageId":"r-1-reasoning-1"}`,
			`{"type":"REASONING_END","messageId":"r-1-reasoning-1"}`,
			`{"type":"RUN_ERROR","message":"The agent run failed: boom","code":"upstream"}`,
		}},
		{"voice step, empty and odd text kept as sent", brainwire.Capture{Kind: brainwire.KindVoice, ThreadID: "t-1", RunID: "r-1"}, Options{}, []brainwire.CaptureEvent{
			{Type: brainwire.CaptureStepStart, StepName: "Processing"}, {Type: brainwire.CaptureStepEnd, StepName: "Processing"},
			outcomeEv(brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, InboxItemID: "i2", Bucket: "Ideas", Confidence: 0.4}),
			chunk(0, "", true), chunk(1, "line\nbreak\u2028", true), complete(),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Processing"}`,
			`{"type":"STEP_FINISHED","stepName":"Processing"}`,
			`{"type":"CUSTOM","name":"brainwire.outcome","value":{"outcome":"low_confidence","inboxItemId":"i2","bucket":"Ideas","confidence":0.4}}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"r-1-text-1","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"r-1-text-1","delta":""}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"r-1-text-1","delta":"line\nbreak\u2028"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"r-1-text-1"}`,
			`{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1","result":{"outcome":"low_confidence","inboxItemId":"i2","bucket":"Ideas","confidence":0.4}}`,
		}},
		{"busy: RUN_ERROR says how long to wait", capture, Options{}, []brainwire.CaptureEvent{
			{Type: brainwire.CaptureStepStart, StepName: "Classifying"},
			{Type: brainwire.CaptureError, Message: "The agent service is busy; try again later", Code: brainwire.EBusy, RetryAfter: 30 * time.Second}, complete(),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Classifying"}`,
			`{"type":"RUN_ERROR","message":"The agent service is busy; try again later","code":"busy","metadata":{"retryAfterSeconds":30}}`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stream := encode(c.c, c.opts, c.evs...)
			got := payloads(t, stream)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if err := aguitest.Verify(got); err != nil {
				t.Fatalf("not a valid AG-UI stream: %v", err)
			}
		})
	}
}

// TestEncodeIsAlwaysWellFormed feeds random event orders, including ones
// the adapter never produces, and checks every stream keeps AG-UI's rules.
func TestEncodeIsAlwaysWellFormed(t *testing.T) {
	pool := []brainwire.CaptureEvent{
		step(brainwire.CaptureStepStart), step(brainwire.CaptureStepEnd),
		chunk(0, "a", false), chunk(1, "b", true),
		call("c1", "file_capture", `{}`), result("c1", "file_capture", `{}`, false), result("c9", "x", `{}`, true),
		outcomeEv(brainwire.CaptureResult{Outcome: brainwire.OutcomeMisunderstood, InboxItemID: "i", Question: "q"}),
		outcomeEv(brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, InboxItemID: "i", Bucket: "People", Confidence: 1}),
		failure("x", "", ""), failure("y", brainwire.EUpstream, "stream_error"), complete(),
		{Type: brainwire.CaptureToolCall}, {Type: brainwire.CaptureToolResult}, {Type: brainwire.CaptureOutcome},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		opts := Options{Reasoning: rng.IntN(2) == 0, State: rng.IntN(2) == 0}
		evs := make([]brainwire.CaptureEvent, rng.IntN(12))
		for j := range evs {
			evs[j] = pool[rng.IntN(len(pool))]
		}
		// A stream always ends in Complete, as the adapter's do.
		evs = append(evs, complete())
		got := payloads(t, encode(capture, opts, evs...))
		if err := aguitest.Verify(got); err != nil {
			t.Fatalf("case %d (%+v): %v\n%s", i, opts, err, strings.Join(got, "\n"))
		}
	}
}
