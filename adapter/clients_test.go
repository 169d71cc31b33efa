package adapter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
)

// describeAll renders every capture event, tool events and the closing
// mark of text included, for the protocols that show more than the phone.
func describeAll(evs []brainwire.CaptureEvent) string {
	var parts []string
	for _, e := range evs {
		switch e.Type {
		case brainwire.CaptureToolCall:
			parts = append(parts, fmt.Sprintf("CALL(%s,%s,%s)", e.Tool.ID, e.Tool.Name, e.Tool.Arguments))
		case brainwire.CaptureToolResult:
			parts = append(parts, fmt.Sprintf("RESULT(%s,%s,%s,err=%v)", e.Tool.ID, e.ToolResult.Name, e.ToolResult.Output, e.ToolResult.IsError))
		case brainwire.CaptureReasoning:
			if e.Chunk.AfterOutcome {
				parts = append(parts, fmt.Sprintf("T%d:%s", e.Chunk.Index, e.Chunk.Text))
			} else {
				parts = append(parts, fmt.Sprintf("R%d:%s", e.Chunk.Index, e.Chunk.Text))
			}
		default:
			parts = append(parts, describe([]brainwire.CaptureEvent{e}))
		}
	}
	return strings.Join(parts, " ")
}

func TestToolEventsAndClosingText(t *testing.T) {
	args := `{"bucket":"Misc","confidence":0.8,"status":"classified"}`
	cases := []struct {
		name string
		evs  []brainwire.AgentEvent
		want string
	}{
		{"a call, its result, then the outcome; text after it is closing text", []brainwire.AgentEvent{
			text("Thinking."), callEvent("c1", `{"bucket":"People"}`), status(brainwire.RunRequiresAction),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			text("Filed"), text(" to People."), status(brainwire.RunCompleted),
		}, `STEP_START(Classifying) R0:Thinking. CALL(c1,file_capture,{"bucket":"People"}) ` +
			`RESULT(c1,file_capture,{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"},err=false) ` +
			`STEP_END(Classifying) classified(i1,People,0.9) T1:Filed T2: to People. COMPLETE(thread-1,run-1)`},
		{"a failed tool is a result like any other; text before the retry is reasoning", []brainwire.AgentEvent{
			callEvent("c1", args), resultEvent("c1", `{"error":"invalid_bucket"}`, true),
			text("Retrying."), callEvent("c2", args),
			resultEvent("c2", `{"bucket":"Admin","confidence":0.8,"item_id":"i5","status":"classified"}`, false),
			status(brainwire.RunCompleted),
		}, `STEP_START(Classifying) CALL(c1,file_capture,` + args + `) RESULT(c1,file_capture,{"error":"invalid_bucket"},err=true) ` +
			`R0:Retrying. CALL(c2,file_capture,` + args + `) ` +
			`RESULT(c2,file_capture,{"bucket":"Admin","confidence":0.8,"item_id":"i5","status":"classified"},err=false) ` +
			`STEP_END(Classifying) classified(i5,Admin,0.8) COMPLETE(thread-1,run-1)`},
		{"other tools show too", []brainwire.AgentEvent{
			{Kind: brainwire.AgentToolCall, Tool: brainwire.ToolCall{ID: "t1", Name: brainwire.ToolTranscribeAudio, Arguments: []byte(`{"blob_url":"u"}`)}},
			{Kind: brainwire.AgentToolResult, Tool: brainwire.ToolCall{ID: "t1", Name: brainwire.ToolTranscribeAudio}, Result: brainwire.ToolResult{Name: brainwire.ToolTranscribeAudio, Output: `{"text":"hi"}`}},
			status(brainwire.RunCompleted),
		}, `STEP_START(Classifying) CALL(t1,transcribe_audio,{"blob_url":"u"}) RESULT(t1,transcribe_audio,{"text":"hi"},err=false) ` +
			`STEP_END(Classifying) unresolved(,,0) COMPLETE(thread-1,run-1)`},
		{"text of a run that never filed stays reasoning", []brainwire.AgentEvent{text("People."), status(brainwire.RunCompleted)},
			"STEP_START(Classifying) R0:People. STEP_END(Classifying) unresolved(,,0) COMPLETE(thread-1,run-1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
			out := a.Start(nil)
			for _, ev := range c.evs {
				out = a.Handle(ev, out)
			}
			if got := describeAll(a.Finish(nil, out)); got != c.want {
				t.Fatalf("\ngot  %s\nwant %s", got, c.want)
			}
		})
	}
}

// Tool events are copies: what the provider does with its own event
// afterwards cannot change what a client was told.
func TestToolEventsAreCopies(t *testing.T) {
	a := New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	ev := callEvent("c1", `{"a":1}`)
	out := a.Handle(ev, nil)
	ev.Tool.ID = "changed"
	var call *brainwire.ToolCall
	for _, e := range out {
		if e.Type == brainwire.CaptureToolCall {
			call = e.Tool
		}
	}
	if call == nil || call.ID != "c1" {
		t.Fatalf("tool call event %+v", call)
	}
}

// An Error event carries the clients' code, and the result with the
// service's own code for telemetry.
func TestErrorCarriesItsType(t *testing.T) {
	a := New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	out := a.Handle(brainwire.AgentEvent{Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed, ErrorCode: "rate_limit_exceeded", ErrorMessage: "slow down"}, nil)
	for _, e := range out {
		if e.Type == brainwire.CaptureError {
			if e.Result == nil || e.Result.ErrorType != "rate_limit_exceeded" || e.Result.ErrorMessage != e.Message {
				t.Fatalf("error event result %+v", e.Result)
			}
			if e.Code != brainwire.EUpstream {
				t.Fatalf("error event code %q, want %q", e.Code, brainwire.EUpstream)
			}
			return
		}
	}
	t.Fatalf("no error event in %s", describeAll(out))
}
