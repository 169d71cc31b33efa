package agui

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
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

func failure(msg, typ string) brainwire.CaptureEvent {
	return brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: msg, Result: &brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: typ, ErrorMessage: msg}}
}

func encode(c brainwire.Capture, opts Options, evs ...brainwire.CaptureEvent) string {
	e := NewEncoder(c, opts)
	var dst []byte
	for _, ev := range evs {
		dst = e.Encode(dst, ev)
	}
	return string(dst)
}

// payloads returns the JSON of each frame, checking the framing: exactly
// `data: <one line>` and a blank line, LF only.
func payloads(t *testing.T, stream string) []string {
	t.Helper()
	if stream == "" {
		return nil
	}
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
		{"failure: RUN_ERROR with its code ends the run; nothing follows", capture, Options{Reasoning: true}, []brainwire.CaptureEvent{
			step(brainwire.CaptureStepStart), chunk(0, "Hm", false),
			failure("The agent run failed: boom", "server_error"), complete(), chunk(1, "late", true),
		}, []string{
			`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`,
			`{"type":"STEP_STARTED","stepName":"Classifying"}`,
			`{"type":"REASONING_START","messageId":"r-1-reasoning-1"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r-1-reasoning-1","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r-1-reasoning-1","delta":"Hm"}`,
			`{"type":"REASONING_MESSAGE_END","messageId":"r-1-reasoning-1"}`,
			`{"type":"REASONING_END","messageId":"r-1-reasoning-1"}`,
			`{"type":"RUN_ERROR","message":"The agent run failed: boom","code":"server_error"}`,
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stream := encode(c.c, c.opts, c.evs...)
			got := payloads(t, stream)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if err := verify(got); err != nil {
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
		failure("x", ""), complete(),
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
		if err := verify(got); err != nil {
			t.Fatalf("case %d (%+v): %v\n%s", i, opts, err, strings.Join(got, "\n"))
		}
	}
}

func TestReasoningChunksAllocateNothing(t *testing.T) {
	for _, opts := range []Options{{}, {Reasoning: true}} {
		e := NewEncoder(capture, opts)
		buf := e.Encode(make([]byte, 0, 4096), step(brainwire.CaptureStepStart))
		ev := chunk(3, " token", false)
		buf = e.Encode(buf, ev) // opens the reasoning message, if asked
		if n := testing.AllocsPerRun(100, func() { buf = e.Encode(buf[:0], ev) }); n != 0 {
			t.Errorf("%+v: a reasoning chunk allocates %v times", opts, n)
		}
	}
}

// verify checks a stream against the rules @ag-ui/client 1.0's
// verifyEvents and schemas enforce (the Node test runs the real client on
// served streams): RUN_STARTED first, one terminal event last, messages,
// tool calls and steps opened before use and closed before RUN_FINISHED,
// required fields present, no nulls.
func verify(frames []string) error {
	required := map[string][]string{
		"RUN_STARTED": {"threadId", "runId"}, "RUN_FINISHED": {"threadId", "runId"}, "RUN_ERROR": {"message"},
		"STEP_STARTED": {"stepName"}, "STEP_FINISHED": {"stepName"},
		"TEXT_MESSAGE_START": {"messageId"}, "TEXT_MESSAGE_CONTENT": {"messageId", "delta"}, "TEXT_MESSAGE_END": {"messageId"},
		"TOOL_CALL_START": {"toolCallId", "toolCallName"}, "TOOL_CALL_ARGS": {"toolCallId", "delta"}, "TOOL_CALL_END": {"toolCallId"},
		"TOOL_CALL_RESULT": {"messageId", "toolCallId", "content"}, "CUSTOM": {"name", "value"}, "STATE_DELTA": {"delta"},
		"REASONING_START": {"messageId"}, "REASONING_MESSAGE_START": {"messageId", "role"}, "REASONING_MESSAGE_CONTENT": {"messageId", "delta"},
		"REASONING_MESSAGE_END": {"messageId"}, "REASONING_END": {"messageId"},
	}
	open := map[string]map[string]bool{"step": {}, "text": {}, "tool": {}, "reasoning": {}, "span": {}}
	opens := map[string][2]string{ // type -> kind, open|use|close
		"STEP_STARTED": {"step", "open"}, "STEP_FINISHED": {"step", "close"},
		"TEXT_MESSAGE_START": {"text", "open"}, "TEXT_MESSAGE_CONTENT": {"text", "use"}, "TEXT_MESSAGE_END": {"text", "close"},
		"TOOL_CALL_START": {"tool", "open"}, "TOOL_CALL_ARGS": {"tool", "use"}, "TOOL_CALL_END": {"tool", "close"},
		"REASONING_MESSAGE_START": {"reasoning", "open"}, "REASONING_MESSAGE_CONTENT": {"reasoning", "use"}, "REASONING_MESSAGE_END": {"reasoning", "close"},
		"REASONING_START": {"span", "open"}, "REASONING_END": {"span", "close"},
	}
	if len(frames) == 0 {
		return fmt.Errorf("empty stream")
	}
	for i, f := range frames {
		var ev map[string]any
		if err := json.Unmarshal([]byte(f), &ev); err != nil {
			return err
		}
		typ, _ := ev["type"].(string)
		need, known := required[typ]
		if !known {
			return fmt.Errorf("frame %d: unknown type %q", i, typ)
		}
		for k, v := range ev {
			if v == nil {
				return fmt.Errorf("frame %d: %s is null", i, k)
			}
		}
		for _, k := range need {
			if _, ok := ev[k]; !ok {
				return fmt.Errorf("frame %d: %s without %s", i, typ, k)
			}
		}
		if typ == "TEXT_MESSAGE_START" && ev["role"] != "assistant" || typ == "REASONING_MESSAGE_START" && ev["role"] != "reasoning" {
			return fmt.Errorf("frame %d: %s role %v", i, typ, ev["role"])
		}
		switch {
		case i == 0 && typ != "RUN_STARTED":
			return fmt.Errorf("first event is %s", typ)
		case i > 0 && typ == "RUN_STARTED":
			return fmt.Errorf("frame %d: a second RUN_STARTED", i)
		case (typ == "RUN_FINISHED" || typ == "RUN_ERROR") && i != len(frames)-1:
			return fmt.Errorf("frame %d: %s is not last", i, typ)
		case i == len(frames)-1 && typ != "RUN_FINISHED" && typ != "RUN_ERROR":
			return fmt.Errorf("last event is %s", typ)
		}
		if typ == "RUN_FINISHED" {
			for kind, ids := range open {
				if len(ids) > 0 {
					return fmt.Errorf("RUN_FINISHED with %s still open: %v", kind, ids)
				}
			}
		}
		if o, ok := opens[typ]; ok {
			key := "stepName"
			switch o[0] {
			case "tool":
				key = "toolCallId"
			case "text", "reasoning", "span":
				key = "messageId"
			}
			id, _ := ev[key].(string)
			ids := open[o[0]]
			switch o[1] {
			case "open":
				if ids[id] {
					return fmt.Errorf("frame %d: %s %q already open", i, typ, id)
				}
				ids[id] = true
			case "use", "close":
				if !ids[id] {
					return fmt.Errorf("frame %d: %s %q not open", i, typ, id)
				}
				if o[1] == "close" {
					delete(ids, id)
				}
			}
		}
	}
	return nil
}

// The checker must fail what the client fails, or the tests above prove
// nothing.
func TestVerifyRejectsWhatTheClientRejects(t *testing.T) {
	start, finish := `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
	cases := map[string][]string{
		"no RUN_STARTED":          {`{"type":"STEP_STARTED","stepName":"s"}`, finish},
		"no terminal event":       {start, `{"type":"STEP_STARTED","stepName":"s"}`},
		"event after the end":     {start, finish, `{"type":"CUSTOM","name":"n","value":1}`},
		"content before start":    {start, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`, finish},
		"message left open":       {start, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`, finish},
		"step left open":          {start, `{"type":"STEP_STARTED","stepName":"s"}`, finish},
		"tool call left open":     {start, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`, finish},
		"reasoning role wrong":    {start, `{"type":"REASONING_MESSAGE_START","messageId":"m","role":"assistant"}`, finish},
		"null optional field":     {start, `{"type":"RUN_ERROR","message":"m","code":null}`},
		"custom without value":    {start, `{"type":"CUSTOM","name":"n"}`, finish},
		"unknown event type":      {start, `{"type":"THINKING_START"}`, finish},
		"finish step never begun": {start, `{"type":"STEP_FINISHED","stepName":"s"}`, finish},
	}
	for name, frames := range cases {
		if verify(frames) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
