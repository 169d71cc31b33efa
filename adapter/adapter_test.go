package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
)

const (
	upThread = "thread_up"
	upRun    = "run_up"
)

func text(s string) brainwire.Event {
	return brainwire.Event{Kind: brainwire.EventTextChunk, Text: s, ThreadID: upThread, RunID: upRun}
}

func status(s brainwire.RunStatus) brainwire.Event {
	return brainwire.Event{Kind: brainwire.EventRunStatus, Status: s, ThreadID: upThread, RunID: upRun}
}

func callEvent(id, args string) brainwire.Event {
	return brainwire.Event{Kind: brainwire.EventToolCall, ThreadID: upThread, RunID: upRun,
		Tool: brainwire.ToolCall{ID: id, Name: brainwire.ToolFileCapture, Arguments: json.RawMessage(args), ThreadID: upThread, RunID: upRun}}
}

func resultEvent(id, output string, isErr bool) brainwire.Event {
	return brainwire.Event{Kind: brainwire.EventToolResult, ThreadID: upThread, RunID: upRun,
		Tool:   brainwire.ToolCall{ID: id, Name: brainwire.ToolFileCapture, ThreadID: upThread, RunID: upRun},
		Result: brainwire.ToolResult{CallID: id, Name: brainwire.ToolFileCapture, Output: output, IsError: isErr}}
}

// describe renders capture events compactly for comparison; reasoning
// chunks show their index and text.
func describe(evs []brainwire.CaptureEvent) string {
	var parts []string
	for _, e := range evs {
		switch e.Type {
		case brainwire.CaptureStepStart, brainwire.CaptureStepEnd:
			parts = append(parts, e.Type.String()+"("+e.StepName+")")
		case brainwire.CaptureClassified, brainwire.CaptureLowConfidence, brainwire.CaptureUnresolved:
			parts = append(parts, fmt.Sprintf("%s(%s,%s,%v)", e.Type, e.Outcome.InboxItemID, e.Outcome.Bucket, e.Outcome.Confidence))
		case brainwire.CaptureMisunderstood:
			parts = append(parts, fmt.Sprintf("%s(%s,%s,%q,%s)", e.Type, e.Outcome.ThreadID, e.Outcome.InboxItemID, e.Outcome.QuestionText, e.Outcome.FoundryConversationID))
		case brainwire.CaptureError:
			parts = append(parts, fmt.Sprintf("ERROR(%s)", e.Message))
		case brainwire.CaptureComplete:
			parts = append(parts, fmt.Sprintf("COMPLETE(%s,%s)", e.ThreadID, e.RunID))
		case brainwire.CaptureReasoning:
			parts = append(parts, fmt.Sprintf("R%d:%s", e.Chunk.Index, e.Chunk.Text))
		}
	}
	return strings.Join(parts, " ")
}

func run(kind brainwire.CaptureKind, evs []brainwire.Event, final error) string {
	a := New(Config{Kind: kind, ThreadID: "thread-1", RunID: "run-1"})
	out := a.Start(nil)
	for _, ev := range evs {
		out = a.Handle(ev, out)
	}
	return describe(a.Finish(final, out))
}

func TestAdapterSequences(t *testing.T) {
	classifiedArgs := `{"text":"call mom","bucket":"People","confidence":0.9,"status":"classified"}`
	cases := []struct {
		name  string
		kind  brainwire.CaptureKind
		evs   []brainwire.Event
		final error
		want  string
	}{
		{"classified, outcome before run completes", brainwire.KindText, []brainwire.Event{
			status(brainwire.RunQueued), text("Mentions "), text("mom."),
			callEvent("c1", classifiedArgs), status(brainwire.RunRequiresAction),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			status(brainwire.RunInProgress), text("Filed."), status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) R0:Mentions  R1:mom. STEP_END(Classifying) CLASSIFIED(i1,People,0.9) R2:Filed. COMPLETE(thread-1,run-1)"},
		{"pending", brainwire.KindText, []brainwire.Event{
			callEvent("c1", `{"bucket":"Ideas","confidence":0.4,"status":"pending"}`),
			resultEvent("c1", `{"bucket":"Ideas","confidence":0.4,"item_id":"i2","status":"pending"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) LOW_CONFIDENCE(i2,Ideas,0.4) COMPLETE(thread-1,run-1)"},
		{"result status wins over the call's", brainwire.KindText, []brainwire.Event{
			callEvent("c1", `{"bucket":"Ideas","confidence":0.4,"status":"classified"}`),
			resultEvent("c1", `{"bucket":"Ideas","confidence":0.4,"item_id":"i2","status":"pending"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) LOW_CONFIDENCE(i2,Ideas,0.4) COMPLETE(thread-1,run-1)"},
		{"misunderstood carries question and upstream thread", brainwire.KindText, []brainwire.Event{
			callEvent("c1", `{"bucket":"","confidence":0.1,"status":"misunderstood","question":"Who is Sam?"}`),
			resultEvent("c1", `{"bucket":"","confidence":0.1,"item_id":"i3","status":"misunderstood"}`, false),
			status(brainwire.RunCompleted),
		}, nil, `STEP_START(Classifying) STEP_END(Classifying) MISUNDERSTOOD(thread-1,i3,"Who is Sam?",thread_up) COMPLETE(thread-1,run-1)`},
		{"misunderstood without a question gets the default", brainwire.KindText, []brainwire.Event{
			callEvent("c1", `{"status":"misunderstood"}`),
			resultEvent("c1", `{"item_id":"i3","status":"misunderstood"}`, false),
			status(brainwire.RunCompleted),
		}, nil, `STEP_START(Classifying) STEP_END(Classifying) MISUNDERSTOOD(thread-1,i3,"` + DefaultQuestion + `",thread_up) COMPLETE(thread-1,run-1)`},
		{"no tool call", brainwire.KindText, []brainwire.Event{text("hmm"), status(brainwire.RunCompleted)}, nil,
			"STEP_START(Classifying) R0:hmm STEP_END(Classifying) UNRESOLVED(,,0) COMPLETE(thread-1,run-1)"},
		{"unknown status", brainwire.KindText, []brainwire.Event{
			callEvent("c1", `{"status":"weird"}`),
			resultEvent("c1", `{"bucket":"Admin","confidence":0.7,"item_id":"i4","status":"weird"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) UNRESOLVED(i4,Admin,0.7) COMPLETE(thread-1,run-1)"},
		{"invalid bucket then retry", brainwire.KindText, []brainwire.Event{
			callEvent("c1", `{"bucket":"Misc","confidence":0.8,"status":"classified"}`),
			resultEvent("c1", `{"error":"invalid_bucket"}`, true),
			callEvent("c2", `{"bucket":"Admin","confidence":0.8,"status":"classified"}`),
			resultEvent("c2", `{"bucket":"Admin","confidence":0.8,"item_id":"i5","status":"classified"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) CLASSIFIED(i5,Admin,0.8) COMPLETE(thread-1,run-1)"},
		{"two filings: only the first is the outcome", brainwire.KindText, []brainwire.Event{
			callEvent("c1", classifiedArgs), callEvent("c2", classifiedArgs),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			resultEvent("c2", `{"error":"already_filed"}`, true),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) CLASSIFIED(i1,People,0.9) COMPLETE(thread-1,run-1)"},
		{"run failed", brainwire.KindText, []brainwire.Event{text("a"), {Kind: brainwire.EventRunStatus, Status: brainwire.RunFailed, ErrorCode: "server_error", ErrorMessage: "boom"}}, nil,
			"STEP_START(Classifying) R0:a ERROR(The agent run failed: boom) COMPLETE(thread-1,run-1)"},
		{"error event", brainwire.KindText, []brainwire.Event{{Kind: brainwire.EventError, ErrorMessage: "rate limited"}, text("ignored")}, nil,
			"STEP_START(Classifying) ERROR(The agent service reported an error: rate limited) COMPLETE(thread-1,run-1)"},
		{"failure after the outcome just completes", brainwire.KindText, []brainwire.Event{
			callEvent("c1", classifiedArgs),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			{Kind: brainwire.EventRunStatus, Status: brainwire.RunFailed, ErrorMessage: "late"},
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) CLASSIFIED(i1,People,0.9) COMPLETE(thread-1,run-1)"},
		{"transport error", brainwire.KindText, []brainwire.Event{text("a")}, errors.New("connection reset by peer"),
			"STEP_START(Classifying) R0:a ERROR(The agent service could not be reached) COMPLETE(thread-1,run-1)"},
		{"timeout", brainwire.KindText, nil, fmt.Errorf("reading stream: %w", context.DeadlineExceeded),
			"STEP_START(Classifying) ERROR(The agent took too long to respond) COMPLETE(thread-1,run-1)"},
		{"upstream api error", brainwire.KindText, nil, fmt.Errorf("creating run: %w", brainwire.Errorf(brainwire.EUpstream, "quota exceeded")),
			"STEP_START(Classifying) ERROR(The agent service failed: quota exceeded) COMPLETE(thread-1,run-1)"},
		{"stream ended without terminal state", brainwire.KindText, []brainwire.Event{status(brainwire.RunInProgress)}, nil,
			"STEP_START(Classifying) ERROR(The agent run ended unexpectedly) COMPLETE(thread-1,run-1)"},
		{"cancelled run", brainwire.KindText, []brainwire.Event{status(brainwire.RunCancelled)}, nil,
			"STEP_START(Classifying) ERROR(The agent run was cancelled) COMPLETE(thread-1,run-1)"},
		{"voice uses Processing", brainwire.KindVoice, []brainwire.Event{
			{Kind: brainwire.EventToolCall, Tool: brainwire.ToolCall{ID: "t1", Name: brainwire.ToolTranscribeAudio}},
			{Kind: brainwire.EventToolResult, Tool: brainwire.ToolCall{ID: "t1", Name: brainwire.ToolTranscribeAudio}, Result: brainwire.ToolResult{Output: `{"text":"hi"}`}},
			callEvent("c1", classifiedArgs),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Processing) STEP_END(Processing) CLASSIFIED(i1,People,0.9) COMPLETE(thread-1,run-1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := run(c.kind, c.evs, c.final); got != c.want {
				t.Fatalf("\ngot  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestNothingAfterComplete(t *testing.T) {
	a := New(Config{Kind: brainwire.KindText, ThreadID: "t", RunID: "r"})
	out := a.Handle(status(brainwire.RunCompleted), nil)
	n := len(out)
	out = a.Handle(text("late"), out)
	out = a.Handle(status(brainwire.RunFailed), out)
	out = a.Finish(errors.New("late"), out)
	if len(out) != n || !a.Done() {
		t.Fatalf("events after COMPLETE: %s", describe(out[n:]))
	}
}

func TestReasoningChunksCarryIDs(t *testing.T) {
	a := New(Config{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	var chunks []brainwire.ReasoningChunk
	for i := 0; i < 300; i++ {
		for _, e := range a.Handle(text(fmt.Sprint(i)), nil) {
			if e.Type == brainwire.CaptureReasoning {
				chunks = append(chunks, e.Chunk)
			}
		}
	}
	if len(chunks) != 300 || a.Chunks() != 300 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if c.Index != i || c.RunID != "run-1" || c.UpstreamRunID != upRun || c.UpstreamThreadID != upThread || c.Text != fmt.Sprint(i) {
			t.Fatalf("chunk %d = %+v", i, c)
		}
	}
}

func TestLongUpstreamMessageIsCutOnARuneBoundary(t *testing.T) {
	msg := upstreamMessage("p", strings.Repeat("é", 150))
	if !strings.HasSuffix(msg, "…") || !utf8Valid(msg) {
		t.Fatalf("bad cut: %q", msg)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }
