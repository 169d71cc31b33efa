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

func text(s string) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: brainwire.AgentTextChunk, Text: s, ThreadID: upThread, RunID: upRun}
}

func status(s brainwire.RunStatus) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: brainwire.AgentRunStatus, Status: s, ThreadID: upThread, RunID: upRun}
}

func callEvent(id, args string) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: brainwire.AgentToolCall, ThreadID: upThread, RunID: upRun,
		Tool: brainwire.ToolCall{ID: id, Name: brainwire.ToolFileCapture, Arguments: json.RawMessage(args), ThreadID: upThread, RunID: upRun}}
}

// resultEvent is file_capture's result as the tools hand it over: the
// output the agent gets, and the same typed. A "question" in output stands
// for the one the agent asked.
func resultEvent(id, output string, isErr bool) brainwire.AgentEvent {
	res := brainwire.ToolResult{CallID: id, Name: brainwire.ToolFileCapture, Output: output, IsError: isErr}
	var v struct {
		brainwire.FileCaptureResult
		Question string `json:"question"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(output), &v); err != nil {
		panic(err)
	}
	if isErr {
		res.ErrorCode = v.Error
	} else {
		f := v.FileCaptureResult
		f.Question = v.Question
		res.Filed = &f
	}
	return brainwire.AgentEvent{Kind: brainwire.AgentToolResult, ThreadID: upThread, RunID: upRun,
		Tool:   brainwire.ToolCall{ID: id, Name: brainwire.ToolFileCapture, ThreadID: upThread, RunID: upRun},
		Result: res}
}

// describe renders capture events compactly for comparison; reasoning
// chunks show their index and text.
func describe(evs []brainwire.CaptureEvent) string {
	var parts []string
	for _, e := range evs {
		switch e.Type {
		case brainwire.CaptureStepStart, brainwire.CaptureStepEnd:
			parts = append(parts, strings.ToUpper(e.Type.String())+"("+e.StepName+")")
		case brainwire.CaptureOutcome:
			r := e.Result
			if r.Outcome == brainwire.OutcomeMisunderstood {
				parts = append(parts, fmt.Sprintf("%s(%s,%s,%q,%s)", r.Outcome, e.ThreadID, r.InboxItemID, r.Question, r.UpstreamThreadID))
			} else {
				parts = append(parts, fmt.Sprintf("%s(%s,%s,%v)", r.Outcome, r.InboxItemID, r.Bucket, r.Confidence))
			}
		case brainwire.CaptureError:
			parts = append(parts, fmt.Sprintf("ERROR[%s](%s)", e.Code, e.Message))
		case brainwire.CaptureComplete:
			parts = append(parts, fmt.Sprintf("COMPLETE(%s,%s)", e.ThreadID, e.RunID))
		case brainwire.CaptureReasoning:
			parts = append(parts, fmt.Sprintf("R%d:%s", e.Chunk.Index, e.Chunk.Text))
		}
	}
	return strings.Join(parts, " ")
}

func run(kind brainwire.CaptureKind, evs []brainwire.AgentEvent, final error) string {
	a := New(brainwire.Capture{Kind: kind, ThreadID: "thread-1", RunID: "run-1"})
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
		evs   []brainwire.AgentEvent
		final error
		want  string
	}{
		{"classified, outcome before run completes", brainwire.KindText, []brainwire.AgentEvent{
			status(brainwire.RunQueued), text("Mentions "), text("mom."),
			callEvent("c1", classifiedArgs), status(brainwire.RunRequiresAction),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			status(brainwire.RunInProgress), text("Filed."), status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) R0:Mentions  R1:mom. STEP_END(Classifying) classified(i1,People,0.9) R2:Filed. COMPLETE(thread-1,run-1)"},
		{"pending", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", `{"bucket":"Ideas","confidence":0.4,"status":"pending"}`),
			resultEvent("c1", `{"bucket":"Ideas","confidence":0.4,"item_id":"i2","status":"pending"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) low_confidence(i2,Ideas,0.4) COMPLETE(thread-1,run-1)"},
		{"misunderstood carries question and upstream thread", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", `{"bucket":"","confidence":0.1,"status":"misunderstood","question":"Who is Sam?"}`),
			resultEvent("c1", `{"bucket":"","confidence":0.1,"item_id":"i3","status":"misunderstood","question":"Who is Sam?"}`, false),
			status(brainwire.RunCompleted),
		}, nil, `STEP_START(Classifying) STEP_END(Classifying) misunderstood(thread-1,i3,"Who is Sam?",thread_up) COMPLETE(thread-1,run-1)`},
		{"misunderstood without a question gets the default", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", `{"status":"misunderstood"}`),
			resultEvent("c1", `{"item_id":"i3","status":"misunderstood"}`, false),
			status(brainwire.RunCompleted),
		}, nil, `STEP_START(Classifying) STEP_END(Classifying) misunderstood(thread-1,i3,"` + DefaultQuestion + `",thread_up) COMPLETE(thread-1,run-1)`},
		{"no tool call", brainwire.KindText, []brainwire.AgentEvent{text("hmm"), status(brainwire.RunCompleted)}, nil,
			"STEP_START(Classifying) R0:hmm STEP_END(Classifying) unresolved(,,0) COMPLETE(thread-1,run-1)"},
		{"unknown status", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", `{"status":"weird"}`),
			resultEvent("c1", `{"bucket":"Admin","confidence":0.7,"item_id":"i4","status":"weird"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) unresolved(i4,Admin,0.7) COMPLETE(thread-1,run-1)"},
		{"invalid bucket then retry", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", `{"bucket":"Misc","confidence":0.8,"status":"classified"}`),
			resultEvent("c1", `{"error":"invalid_bucket"}`, true),
			callEvent("c2", `{"bucket":"Admin","confidence":0.8,"status":"classified"}`),
			resultEvent("c2", `{"bucket":"Admin","confidence":0.8,"item_id":"i5","status":"classified"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) classified(i5,Admin,0.8) COMPLETE(thread-1,run-1)"},
		{"two filings: only the first is the outcome", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", classifiedArgs), callEvent("c2", classifiedArgs),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			resultEvent("c2", `{"error":"already_filed"}`, true),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) classified(i1,People,0.9) COMPLETE(thread-1,run-1)"},
		{"run failed", brainwire.KindText, []brainwire.AgentEvent{text("a"), {Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed, ErrorCode: "server_error", ErrorMessage: "boom"}}, nil,
			"STEP_START(Classifying) R0:a ERROR[upstream](The agent run failed: boom) COMPLETE(thread-1,run-1)"},
		{"error event", brainwire.KindText, []brainwire.AgentEvent{{Kind: brainwire.AgentError, ErrorMessage: "rate limited"}, text("ignored")}, nil,
			"STEP_START(Classifying) ERROR[upstream](The agent service reported an error: rate limited) COMPLETE(thread-1,run-1)"},
		{"failure after the outcome just completes", brainwire.KindText, []brainwire.AgentEvent{
			callEvent("c1", classifiedArgs),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			{Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed, ErrorMessage: "late"},
		}, nil, "STEP_START(Classifying) STEP_END(Classifying) classified(i1,People,0.9) COMPLETE(thread-1,run-1)"},
		{"transport error", brainwire.KindText, []brainwire.AgentEvent{text("a")}, errors.New("connection reset by peer"),
			"STEP_START(Classifying) R0:a ERROR[unavailable](The agent service could not be reached) COMPLETE(thread-1,run-1)"},
		{"timeout", brainwire.KindText, nil, fmt.Errorf("reading stream: %w", context.DeadlineExceeded),
			"STEP_START(Classifying) ERROR[timeout](The agent took too long to respond) COMPLETE(thread-1,run-1)"},
		{"brainwire could not sign in", brainwire.KindText, nil, fmt.Errorf("creating run: %w", brainwire.Errorf(brainwire.EUpstreamAuth, "brainwire could not sign in to the agent service")),
			"STEP_START(Classifying) ERROR[upstream_auth](brainwire could not sign in to the agent service) COMPLETE(thread-1,run-1)"},
		{"the capture cancelled", brainwire.KindText, nil, fmt.Errorf("reading stream: %w", context.Canceled),
			"STEP_START(Classifying) ERROR[canceled](The capture was cancelled) COMPLETE(thread-1,run-1)"},
		{"an application error of the service's own", brainwire.KindText, nil, fmt.Errorf("getting agent: %w", brainwire.Errorf(brainwire.ENotFound, "the agent service has no agent a1")),
			"STEP_START(Classifying) ERROR[upstream](The agent service failed: the agent service has no agent a1) COMPLETE(thread-1,run-1)"},
		{"upstream api error", brainwire.KindText, nil, fmt.Errorf("creating run: %w", brainwire.Errorf(brainwire.EUpstream, "quota exceeded")),
			"STEP_START(Classifying) ERROR[upstream](The agent service failed: quota exceeded) COMPLETE(thread-1,run-1)"},
		{"stream ended without terminal state", brainwire.KindText, []brainwire.AgentEvent{status(brainwire.RunInProgress)}, nil,
			"STEP_START(Classifying) ERROR[upstream](The agent run ended unexpectedly) COMPLETE(thread-1,run-1)"},
		{"cancelled run", brainwire.KindText, []brainwire.AgentEvent{status(brainwire.RunCancelled)}, nil,
			"STEP_START(Classifying) ERROR[upstream](The agent run was cancelled) COMPLETE(thread-1,run-1)"},
		{"expired run", brainwire.KindText, []brainwire.AgentEvent{status(brainwire.RunExpired)}, nil,
			"STEP_START(Classifying) ERROR[upstream](The agent run expired) COMPLETE(thread-1,run-1)"},
		{"incomplete run", brainwire.KindText, []brainwire.AgentEvent{status(brainwire.RunIncomplete)}, nil,
			"STEP_START(Classifying) ERROR[upstream](The agent run ended incomplete) COMPLETE(thread-1,run-1)"},
		{"voice uses Processing", brainwire.KindVoice, []brainwire.AgentEvent{
			{Kind: brainwire.AgentToolCall, Tool: brainwire.ToolCall{ID: "t1", Name: brainwire.ToolTranscribeAudio}},
			{Kind: brainwire.AgentToolResult, Tool: brainwire.ToolCall{ID: "t1", Name: brainwire.ToolTranscribeAudio}, Result: brainwire.ToolResult{Output: `{"text":"hi"}`}},
			callEvent("c1", classifiedArgs),
			resultEvent("c1", `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`, false),
			status(brainwire.RunCompleted),
		}, nil, "STEP_START(Processing) STEP_END(Processing) classified(i1,People,0.9) COMPLETE(thread-1,run-1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := run(c.kind, c.evs, c.final); got != c.want {
				t.Fatalf("\ngot  %s\nwant %s", got, c.want)
			}
		})
	}
}

// superseded is file_capture's refusal of a follow-up whose item a person
// changed (EConflict) or deleted (ENotFound) meanwhile.
func superseded(id, code string) brainwire.AgentEvent {
	ev := resultEvent(id, `{"error":"store_failed"}`, true)
	ev.Result.Superseded = code
	return ev
}

// A follow-up that lost its item to a person's edit ends in an error that
// says so, typed by the store's code, not in unresolved; other endings
// are as they would be.
func TestSupersededFollowUp(t *testing.T) {
	args := `{"bucket":"People","confidence":0.9,"status":"classified"}`
	cases := []struct {
		name string
		evs  []brainwire.AgentEvent
		want string
		typ  string
	}{
		{"changed", []brainwire.AgentEvent{callEvent("c1", args), superseded("c1", brainwire.EConflict), text("Sorry."), status(brainwire.RunCompleted)},
			"STEP_START(Classifying) R0:Sorry. ERROR[conflict](The item was changed while the follow-up ran, so the follow-up was not filed) COMPLETE(thread-1,run-1)",
			brainwire.EConflict},
		{"deleted, and the agent tried again", []brainwire.AgentEvent{
			callEvent("c1", args), superseded("c1", brainwire.ENotFound), callEvent("c2", args), superseded("c2", brainwire.ENotFound), status(brainwire.RunCompleted)},
			"STEP_START(Classifying) ERROR[not_found](The item was deleted while the follow-up ran, so the follow-up was not filed) COMPLETE(thread-1,run-1)",
			brainwire.ENotFound},
		{"the run failing afterwards says so", []brainwire.AgentEvent{
			callEvent("c1", args), superseded("c1", brainwire.EConflict), {Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed, ErrorCode: "server_error", ErrorMessage: "boom"}},
			"STEP_START(Classifying) ERROR[upstream](The agent run failed: boom) COMPLETE(thread-1,run-1)", "server_error"},
		{"another store failure is unresolved", []brainwire.AgentEvent{callEvent("c1", args), resultEvent("c1", `{"error":"store_failed"}`, true), status(brainwire.RunCompleted)},
			"STEP_START(Classifying) STEP_END(Classifying) unresolved(,,0) COMPLETE(thread-1,run-1)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(brainwire.Capture{Kind: brainwire.KindFollowUp, ThreadID: "thread-1", RunID: "run-1"})
			out := a.Start(nil)
			for _, ev := range c.evs {
				out = a.Handle(ev, out)
			}
			if got := describe(a.Finish(nil, out)); got != c.want {
				t.Errorf("\ngot  %s\nwant %s", got, c.want)
			}
			if res := a.Result(); res.ErrorType != c.typ || (c.typ != "") != (res.Outcome == brainwire.OutcomeError) {
				t.Errorf("result %+v, want error type %q", res, c.typ)
			}
		})
	}
}

func TestNothingAfterComplete(t *testing.T) {
	a := New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "t", RunID: "r"})
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
	a := New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	var chunks []brainwire.ReasoningChunk
	for i := 0; i < 300; i++ {
		for _, e := range a.Handle(text(fmt.Sprint(i)), nil) {
			if e.Type == brainwire.CaptureReasoning {
				chunks = append(chunks, e.Chunk)
			}
		}
	}
	if len(chunks) != 300 || a.Result().ReasoningChunks != 300 {
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

// result runs evs through a fresh adapter and returns its result.
func result(evs []brainwire.AgentEvent, final error) brainwire.CaptureResult {
	a := New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	var out []brainwire.CaptureEvent
	for _, ev := range evs {
		out = a.Handle(ev, out)
	}
	a.Finish(final, out)
	return *a.Result()
}

func TestResult(t *testing.T) {
	usage := func(p, c int64) brainwire.AgentEvent {
		return brainwire.AgentEvent{Kind: brainwire.AgentUsage, Usage: brainwire.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}}
	}
	filed := resultEvent("c1", `{"bucket":"Ideas","confidence":0.4,"item_id":"i2","status":"pending"}`, false)
	late := errors.New("connection reset by peer")
	signIn := fmt.Errorf("creating a response: %w", brainwire.Errorf(brainwire.EUpstreamAuth, "brainwire could not sign in to the agent service"))
	unreachable := fmt.Errorf("creating a response: %w", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	cases := []struct {
		name  string
		evs   []brainwire.AgentEvent
		final error
		want  brainwire.CaptureResult
	}{
		{"filed; usage of each response adds up", []brainwire.AgentEvent{
			text("a"), usage(10, 2), filed, text("b"), usage(5, 1), status(brainwire.RunCompleted),
		}, nil, brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, InboxItemID: "i2", Bucket: "Ideas", Confidence: 0.4,
			ReasoningChunks: 2, UpstreamThreadID: upThread, UpstreamRunID: upRun, RunStatus: brainwire.RunCompleted,
			Usage: brainwire.Usage{PromptTokens: 15, CompletionTokens: 3, TotalTokens: 18}, HasUsage: true}},
		{"failed run", []brainwire.AgentEvent{{Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed, ErrorCode: "server_error", ErrorMessage: "boom"}}, nil,
			brainwire.CaptureResult{Outcome: brainwire.OutcomeError, RunStatus: brainwire.RunFailed, ErrorType: "server_error", ErrorMessage: "The agent run failed: boom"}},
		{"error event without a code", []brainwire.AgentEvent{{Kind: brainwire.AgentError, ErrorMessage: "x"}}, nil,
			brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: "stream_error", ErrorMessage: "The agent service reported an error: x"}},
		{"a failed run after the filing is not a failed capture", []brainwire.AgentEvent{
			filed, {Kind: brainwire.AgentRunStatus, Status: brainwire.RunFailed, ErrorCode: "server_error"},
		}, nil, brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, InboxItemID: "i2", Bucket: "Ideas", Confidence: 0.4,
			UpstreamThreadID: upThread, UpstreamRunID: upRun, RunStatus: brainwire.RunFailed}},
		{"a broken stream after the filing keeps its cause", []brainwire.AgentEvent{filed}, late,
			brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, InboxItemID: "i2", Bucket: "Ideas", Confidence: 0.4,
				UpstreamThreadID: upThread, UpstreamRunID: upRun, ErrorType: brainwire.EInternal, Err: late}},
		{"timeout", nil, fmt.Errorf("run timed out: %w", context.DeadlineExceeded),
			brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: "timeout", ErrorMessage: "The agent took too long to respond",
				Err: fmt.Errorf("run timed out: %w", context.DeadlineExceeded)}},
		{"brainwire could not sign in", nil, signIn,
			brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: brainwire.EUpstreamAuth,
				ErrorMessage: "brainwire could not sign in to the agent service", Err: signIn}},
		{"the service unreachable", nil, unreachable,
			brainwire.CaptureResult{Outcome: brainwire.OutcomeError, ErrorType: brainwire.EInternal,
				ErrorMessage: "The agent service could not be reached", Err: unreachable}},
		{"stream ended early", []brainwire.AgentEvent{status(brainwire.RunInProgress)}, nil,
			brainwire.CaptureResult{Outcome: brainwire.OutcomeError, UpstreamThreadID: upThread, UpstreamRunID: upRun, RunStatus: brainwire.RunInProgress,
				ErrorType: "capture_error", ErrorMessage: "The agent run ended unexpectedly"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := result(c.evs, c.final)
			if (got.Err == nil) != (c.want.Err == nil) || got.Err != nil && got.Err.Error() != c.want.Err.Error() {
				t.Fatalf("Err = %v, want %v", got.Err, c.want.Err)
			}
			got.Err, c.want.Err = nil, nil
			if got != c.want {
				t.Fatalf("\ngot  %+v\nwant %+v", got, c.want)
			}
		})
	}
}
