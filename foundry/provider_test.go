package foundry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrytest"
)

// tools is a ToolSet for tests.
type tools struct {
	defs []brainwire.ToolDefinition
	call func(ctx context.Context, c brainwire.ToolCall) brainwire.ToolResult
}

func (ts tools) Definitions() []brainwire.ToolDefinition { return ts.defs }
func (ts tools) Call(ctx context.Context, c brainwire.ToolCall) brainwire.ToolResult {
	return ts.call(ctx, c)
}

func fileCaptureDef() brainwire.ToolDefinition {
	t := foundrytest.FileCaptureTool()
	return brainwire.ToolDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
}

// echoTools answers every call with {"ok":"<name>"}.
func echoTools() tools {
	return tools{
		defs: []brainwire.ToolDefinition{fileCaptureDef()},
		call: func(_ context.Context, c brainwire.ToolCall) brainwire.ToolResult {
			return brainwire.ToolResult{CallID: c.ID, Name: c.Name, Output: fmt.Sprintf(`{"ok":%q}`, c.Name)}
		},
	}
}

func newProvider(t *testing.T, srv *foundrytest.Server, opts ...foundry.ProviderOption) *foundry.Provider {
	t.Helper()
	hc := &http.Client{Transport: foundry.NewStaticTokenTransport("test-token", srv.Client().Transport)}
	c, err := foundry.NewClient(srv.Endpoint(), hc)
	if err != nil {
		t.Fatal(err)
	}
	return mustProvider(t, c, "asst_classifier", opts...)
}

// mustProvider returns the provider of agentID through c.
func mustProvider(t *testing.T, c *foundry.Client, agentID string, opts ...foundry.ProviderOption) *foundry.Provider {
	t.Helper()
	p, err := foundry.NewProvider(c, agentID, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runAgent runs the agent through p as the server does: in the agent loop.
func runAgent(ctx context.Context, p brainwire.Provider, req brainwire.RunRequest, tools brainwire.ToolSet) iter.Seq2[brainwire.AgentEvent, error] {
	return agent.NewLoop(p).Run(ctx, req, tools)
}

// collect runs the provider and returns its events and final error,
// checking that an error comes once, last, with a zero event.
func collect(t *testing.T, seq func(yield func(brainwire.AgentEvent, error) bool)) ([]brainwire.AgentEvent, error) {
	t.Helper()
	var evs []brainwire.AgentEvent
	var final error
	for ev, err := range seq {
		if final != nil {
			t.Fatalf("yielded after the error %v: %+v, %v", final, ev, err)
		}
		if err != nil {
			if !reflect.DeepEqual(ev, brainwire.AgentEvent{}) {
				t.Fatalf("error %v came with a non-zero event %+v", err, ev)
			}
			final = err
			continue
		}
		evs = append(evs, ev)
	}
	return evs, final
}

func TestRunSingleToolRound(t *testing.T) {
	c := foundrytest.NewClassify("thread_1", "run_1", 3)
	srv := foundrytest.NewServer(t, c.Script()...)
	p := newProvider(t, srv)
	if p.Name() != "azure.ai.agents" {
		t.Fatalf("name %q", p.Name())
	}

	var calls []brainwire.ToolCall
	ts := tools{
		defs: []brainwire.ToolDefinition{fileCaptureDef()},
		call: func(_ context.Context, call brainwire.ToolCall) brainwire.ToolResult {
			calls = append(calls, call)
			return brainwire.ToolResult{Output: c.Output}
		},
	}
	evs, err := collect(t, runAgent(t.Context(), p, brainwire.RunRequest{Message: "Call Sarah about the offsite"}, ts))
	if err != nil {
		t.Fatal(err)
	}
	want := "run_status:queued run_status:queued run_status:in_progress text_chunk text_chunk text_chunk " +
		"tool_call run_status:requires_action tool_result " +
		"run_status:queued run_status:in_progress text_chunk text_chunk text_chunk text_chunk usage run_status:completed"
	if got := kinds(evs); got != want {
		t.Fatalf("events:\n got  %s\n want %s", got, want)
	}
	checkIDs(t, evs, "thread_1", "run_1")

	if len(calls) != 1 || calls[0].ID != c.Call.ID || calls[0].Name != "file_capture" || string(calls[0].Arguments) != c.Call.Arguments ||
		calls[0].ThreadID != "thread_1" || calls[0].RunID != "run_1" {
		t.Fatalf("tool calls %+v", calls)
	}
	res := evs[8]
	if res.Tool.ID != c.Call.ID || res.Result.Output != c.Output || res.Result.CallID != c.Call.ID || res.Result.Name != "file_capture" {
		t.Fatalf("tool result event %+v", res)
	}
	if u := evs[len(evs)-2].Usage; u != (brainwire.Usage{PromptTokens: 1200, CompletionTokens: 180, TotalTokens: 1380}) {
		t.Fatalf("usage %+v", u)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests %v", reqs)
	}
	create, submit := reqs[0], reqs[1]
	for _, r := range reqs {
		if r.Query.Get("api-version") != "v1" || r.Header.Get("Authorization") != "Bearer test-token" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("%s: query %v, headers %v", r, r.Query, r.Header)
		}
	}
	wantCreate := `{"assistant_id":"asst_classifier","stream":true,` +
		`"thread":{"messages":[{"content":"Call Sarah about the offsite","role":"user"}]},` +
		`"tools":[{"function":{"description":"Files the capture into one of the four buckets.","name":"file_capture","parameters":` +
		canonical(t, foundrytest.FileCaptureTool().Parameters) + `},"type":"function"}]}`
	if got := untagged(t, create.RawBody); got != wantCreate {
		t.Errorf("create body:\n got  %s\n want %s", got, wantCreate)
	}
	wantSubmit := `{"stream":true,"tool_outputs":[{"output":` + mustJSON(c.Output) + `,"tool_call_id":"call_file_1"}]}`
	if got := canonical(t, submit.RawBody); got != wantSubmit {
		t.Errorf("submit body:\n got  %s\n want %s", got, wantSubmit)
	}
	if n := len(srv.Cancels()); n != 0 {
		t.Errorf("%d cancels for a completed run", n)
	}
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// untagged is canonical(b) without the call's tag (metadata
// brainwire_call), which it checks is there: a create is tagged with a key
// of its own, and a thread created with its run with the same key.
func untagged(t *testing.T, b []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	md, _ := v["metadata"].(map[string]any)
	k, _ := md[foundry.MetadataCall].(string)
	if len(k) < 16 || len(md) != 1 {
		t.Errorf("metadata %v; want the call's tag alone", v["metadata"])
	}
	delete(v, "metadata")
	if th, ok := v["thread"].(map[string]any); ok {
		if md, _ := th["metadata"].(map[string]any); len(md) != 1 || md[foundry.MetadataCall] != k {
			t.Errorf("thread metadata %v; want the call's tag %s alone", th["metadata"], k)
		}
		delete(th, "metadata")
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRunParallelToolCalls(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	a := foundrytest.ToolCall{ID: "call_a", Name: "slow_a", Arguments: `{"n":1}`}
	b := foundrytest.ToolCall{ID: "call_b", Name: "slow_b", Arguments: `{"n":2}`}
	srv := foundrytest.NewServer(t,
		foundrytest.Expect("POST /threads/runs", foundrytest.Stream(append(append(
			[]foundrytest.Event{r.ThreadCreated(), r.Created(), r.InProgress()},
			r.ToolCallStep("step_1", a, b)...), r.RequiresAction(a, b), foundrytest.Done())...)),
		foundrytest.Expect("POST /threads/{t}/runs/{r}/submit_tool_outputs", foundrytest.Stream(
			r.ToolStepCompleted("step_1", []foundrytest.ToolCall{a, b}, []string{"A", "B"}, foundrytest.Usage{}),
			r.InProgress(), r.Completed(foundrytest.Usage{Prompt: 10, Completion: 5, Total: 15}), foundrytest.Done())),
	)
	p := newProvider(t, srv)

	// The calls run at once (agent.CallTools); the one that ends last is
	// still answered first, in the order the run asked.
	ts := tools{call: func(ctx context.Context, c brainwire.ToolCall) brainwire.ToolResult {
		if c.ID == "call_a" {
			time.Sleep(20 * time.Millisecond)
		}
		return brainwire.ToolResult{Output: strings.ToUpper(c.Name)}
	}}
	evs, err := collect(t, runAgent(t.Context(), p, brainwire.RunRequest{Message: "go"}, ts))
	if err != nil {
		t.Fatal(err)
	}
	var results []brainwire.AgentEvent
	for _, ev := range evs {
		if ev.Kind == brainwire.AgentToolResult {
			results = append(results, ev)
		}
	}
	if len(results) != 2 || results[0].Tool.ID != "call_a" || results[0].Result.Output != "SLOW_A" ||
		results[1].Tool.ID != "call_b" || results[1].Result.Output != "SLOW_B" {
		t.Fatalf("results %+v", results)
	}
	var body struct {
		ToolOutputs []foundry.ToolOutput `json:"tool_outputs"`
	}
	json.Unmarshal(srv.Requests()[1].RawBody, &body)
	if want := []foundry.ToolOutput{{ToolCallID: "call_a", Output: "SLOW_A"}, {ToolCallID: "call_b", Output: "SLOW_B"}}; !reflect.DeepEqual(body.ToolOutputs, want) {
		t.Fatalf("outputs %+v", body.ToolOutputs)
	}
	if kinds(evs[len(evs)-1:]) != "run_status:completed" {
		t.Fatalf("last event %s", kinds(evs))
	}
}

// A refused run ends with the service's error (TestAPIErrorBodies reads
// them), and no cancel for a run never created.
func TestRunAPIError(t *testing.T) {
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs",
		foundrytest.Error(http.StatusBadRequest, "invalid_request", "No assistant found with id 'asst_classifier'.")))
	evs, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{Message: "x"}, echoTools()))
	var apiErr *foundry.APIError
	if len(evs) != 0 || !errors.As(err, &apiErr) || apiErr.Code != "invalid_request" ||
		brainwire.ErrorCode(err) != brainwire.EUpstream || brainwire.ErrorMessage(err) != "No assistant found with id 'asst_classifier'." {
		t.Fatalf("events %s, error %v", kinds(evs), err)
	}
	if len(srv.Cancels()) != 0 {
		t.Fatal("cancel sent for a run that was never created")
	}
}

// TestRunUpstreamFaults: each way the service can fail a run ends it as
// the phone must hear it, and a run left going is cancelled.
func TestRunUpstreamFaults(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	start := []foundrytest.Event{r.ThreadCreated(), r.Created(), r.InProgress()}
	stream := func(evs ...foundrytest.Event) []foundrytest.Call {
		return []foundrytest.Call{foundrytest.Expect("POST /threads/runs", foundrytest.Stream(append(start[:3:3], evs...)...))}
	}
	tests := []struct {
		name    string
		script  []foundrytest.Call
		kinds   string // of the events before the end
		check   func(err error, last brainwire.AgentEvent) bool
		cancels int
	}{
		{
			name: "submitting the outputs fails",
			script: []foundrytest.Call{
				foundrytest.Expect("POST /threads/runs", foundrytest.Stream(r.Created(), r.RequiresAction(foundrytest.ToolCall{ID: "c1", Name: "f", Arguments: "{}"}), foundrytest.Done())),
				foundrytest.Expect("POST /threads/thread_1/runs/run_1/submit_tool_outputs", foundrytest.Error(500, "server_error", "The server had an error.")),
			},
			kinds: "run_status:queued tool_call run_status:requires_action tool_result",
			check: func(err error, _ brainwire.AgentEvent) bool {
				var apiErr *foundry.APIError
				return errors.As(err, &apiErr) && apiErr.StatusCode == 500 && strings.Contains(err.Error(), "submitting tool outputs for run run_1")
			},
			cancels: 1,
		},
		{
			name:   "the connection resets",
			script: stream(foundrytest.MessageDelta("msg_1", "thinking"), foundrytest.Cut(foundrytest.MessageDelta("msg_1", "about the capture"))),
			kinds:  "run_status:queued run_status:in_progress text_chunk",
			check: func(err error, _ brainwire.AgentEvent) bool {
				return err != nil && !errors.Is(err, io.EOF) && brainwire.ErrorCode(err) == brainwire.EUpstream
			},
			cancels: 1,
		},
		{
			name:   "the run fails",
			script: stream(r.Failed("rate_limit_exceeded", "Rate limit is exceeded. Try again in 7 seconds."), foundrytest.Done()),
			kinds:  "run_status:queued run_status:in_progress run_status:failed",
			check: func(err error, last brainwire.AgentEvent) bool {
				return err == nil && last.ErrorCode == "rate_limit_exceeded" && last.ErrorMessage == "Rate limit is exceeded. Try again in 7 seconds."
			},
		},
		{
			name:   "an error event",
			script: stream(foundrytest.ErrorEvent(`{"error":{"message":"The service is overloaded.","type":"server_error","code":"server_overloaded"}}`)),
			kinds:  "run_status:queued run_status:in_progress error",
			check: func(err error, last brainwire.AgentEvent) bool {
				return err == nil && last.ErrorMessage == "The service is overloaded." && last.ErrorCode == "server_overloaded" && last.RunID == "run_1"
			},
			cancels: 1,
		},
		{
			name:   "done before the run ends",
			script: stream(foundrytest.Done()),
			kinds:  "run_status:queued run_status:in_progress",
			check: func(err error, _ brainwire.AgentEvent) bool {
				return err != nil && strings.Contains(err.Error(), `"in_progress"`) && brainwire.ErrorCode(err) == brainwire.EUpstream
			},
			cancels: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := foundrytest.NewServer(t, tt.script...)
			evs, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{Message: "x"}, echoTools()))
			var last brainwire.AgentEvent
			if len(evs) > 0 {
				last = evs[len(evs)-1]
			}
			if kinds(evs) != tt.kinds || !tt.check(err, last) {
				t.Fatalf("events %s, last %+v, error %v", kinds(evs), last, err)
			}
			cancels := srv.Cancels()
			if len(cancels) != tt.cancels || tt.cancels > 0 && cancels[0].Path != "/threads/thread_1/runs/run_1/cancel" {
				t.Fatalf("cancels %v, want %d", cancels, tt.cancels)
			}
		})
	}
}

func TestRunHangPastDeadline(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs", foundrytest.Stream(
		r.ThreadCreated(), r.Created(), r.InProgress(), foundrytest.MessageDelta("m", "hmm"), foundrytest.Hang())))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	evs, err := collect(t, runAgent(ctx, newProvider(t, srv), brainwire.RunRequest{Message: "x"}, echoTools()))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
	if kinds(evs) != "run_status:queued run_status:in_progress text_chunk" {
		t.Fatalf("events %s", kinds(evs))
	}
	cancels := srv.Cancels()
	if len(cancels) != 1 || cancels[0].Path != "/threads/thread_1/runs/run_1/cancel" || cancels[0].Header.Get("Authorization") != "Bearer test-token" {
		t.Fatalf("cancels %v", cancels)
	}
}

func TestRunConsumerStopsEarly(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs", foundrytest.Stream(
		r.ThreadCreated(), r.Created(), r.InProgress(), foundrytest.MessageDelta("m", "one"), foundrytest.MessageDelta("m", "two"), foundrytest.Hang())))
	n := 0
	for ev, err := range runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{Message: "x"}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Kind == brainwire.AgentTextChunk {
			break
		}
	}
	if n != 3 {
		t.Fatalf("%d events", n)
	}
	if len(srv.Cancels()) != 1 {
		t.Fatal("no cancel after the consumer stopped")
	}
}

func TestRunExistingThread(t *testing.T) {
	r := foundrytest.NewRun("thread_old", "run_2")
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/thread_old/runs", foundrytest.Stream(
		r.Created(), r.InProgress(), foundrytest.MessageDelta("m", "ok"), r.Completed(foundrytest.Usage{Total: 3}), foundrytest.Done())))
	evs, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{
		ThreadID: "thread_old", Message: "It was about the Q3 offsite", AdditionalInstructions: "This is follow-up round 1.",
	}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, evs, "thread_old", "run_2")
	body := srv.Requests()[0].Body
	msgs := body["additional_messages"].([]any)
	if body["assistant_id"] != "asst_classifier" || body["additional_instructions"] != "This is follow-up round 1." || body["stream"] != true ||
		len(msgs) != 1 || msgs[0].(map[string]any)["role"] != "user" || msgs[0].(map[string]any)["content"] != "It was about the Q3 offsite" ||
		len(body["tools"].([]any)) != 1 || body["thread"] != nil {
		t.Fatalf("body %s", srv.Requests()[0].RawBody)
	}
}

func TestRunResetAfterRequiresAction(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	call := foundrytest.ToolCall{ID: "c1", Name: "f", Arguments: "{}"}
	srv := foundrytest.NewServer(t,
		foundrytest.Expect("POST /threads/runs", foundrytest.Stream(r.Created(), r.RequiresAction(call), foundrytest.Cut(foundrytest.Done()))),
		foundrytest.Expect("POST /threads/thread_1/runs/run_1/submit_tool_outputs", foundrytest.Stream(r.Completed(foundrytest.Usage{}), foundrytest.Done())),
	)
	evs, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{Message: "x"}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(evs); got != "run_status:queued tool_call run_status:requires_action tool_result usage run_status:completed" {
		t.Fatalf("events %s", got)
	}
	if len(srv.Cancels()) != 0 {
		t.Fatal("completed run cancelled")
	}
}

// TestRunInstructionsOverride checks that a run's instructions go as the
// run's instructions field, which replaces the agent's for that run, on
// both ways of starting a run.
func TestRunInstructionsOverride(t *testing.T) {
	r1 := foundrytest.NewRun("thread_1", "run_1")
	r2 := foundrytest.NewRun("thread_old", "run_2")
	r3 := foundrytest.NewRun("thread_new", "run_3")
	srv := foundrytest.NewServer(t,
		foundrytest.Expect("POST /threads/runs", foundrytest.Stream(r1.Created(), r1.Completed(foundrytest.Usage{}), foundrytest.Done())),
		foundrytest.Expect("POST /threads/thread_old/runs", foundrytest.Stream(r2.Created(), r2.Completed(foundrytest.Usage{}), foundrytest.Done())),
		foundrytest.Expect("POST /threads", foundrytest.JSON(200, `{"id":"thread_new","object":"thread"}`)),
		foundrytest.Expect("POST /threads/thread_new/runs", foundrytest.Stream(r3.Created(), r3.Completed(foundrytest.Usage{}), foundrytest.Done())),
		foundrytest.Expect("POST /threads/runs", foundrytest.Stream(r1.Created(), r1.Completed(foundrytest.Usage{}), foundrytest.Done())),
	)
	p := newProvider(t, srv)
	const instr = "Classify captures. Errands are Admin."
	for _, req := range []brainwire.RunRequest{
		{Message: "buy milk", Instructions: instr},
		{ThreadID: "thread_old", Message: "it is an errand", Instructions: instr, AdditionalInstructions: "Round 1."},
		{Message: "buy milk", Instructions: instr, AdditionalInstructions: "Round 1."},
		{Message: "buy milk"},
	} {
		if _, err := collect(t, runAgent(t.Context(), p, req, nil)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	for _, i := range []int{0, 1, 3} {
		if got := reqs[i].Body["instructions"]; got != instr {
			t.Errorf("%s: instructions %v, want the override", reqs[i], got)
		}
	}
	// Additional instructions on a new thread: the thread is created
	// first, then the run on it.
	if got := canonical(t, reqs[2].RawBody); got != `{"messages":[{"content":"buy milk","role":"user"}]}` {
		t.Errorf("thread body %s", got)
	}
	if got := untagged(t, reqs[3].RawBody); got != `{"additional_instructions":"Round 1.","assistant_id":"asst_classifier","instructions":"`+instr+`","stream":true}` {
		t.Errorf("run body %s", got)
	}
	if _, ok := reqs[4].Body["instructions"]; ok {
		t.Errorf("a run without an override sends instructions: %s", reqs[4].RawBody)
	}
}
