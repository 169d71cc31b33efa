package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
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

var fileCaptureDef = brainwire.ToolDefinition{
	Name:        brainwire.ToolFileCapture,
	Description: "File the capture.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"bucket":{"type":"string"}},"required":["bucket"]}`),
}

// echoTools answers every call with {"ok":"<name>"}.
func echoTools() tools {
	return tools{
		defs: []brainwire.ToolDefinition{fileCaptureDef},
		call: func(_ context.Context, c brainwire.ToolCall) brainwire.ToolResult {
			return brainwire.ToolResult{CallID: c.ID, Name: c.Name, Output: fmt.Sprintf(`{"ok":%q}`, c.Name)}
		},
	}
}

// opRecorder is a transport that notes the operation each request names.
type opRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	ops  []brainwire.Operation
}

func (o *opRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	op, _ := brainwire.OperationFrom(req.Context())
	o.mu.Lock()
	o.ops = append(o.ops, op)
	o.mu.Unlock()
	return o.next.RoundTrip(req)
}

func (o *opRecorder) names() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, op := range o.ops {
		out = append(out, fmt.Sprintf("%s[%s %s]", op.Name, op.ThreadID, op.RunID))
	}
	return strings.Join(out, " ")
}

var modelAgent = responses.Agent{Model: "gpt-5-mini", Instructions: "You are the Classifier."}

func newProvider(t *testing.T, srv *rt.Server, a responses.Agent, opts ...responses.ProviderOption) (*responses.Provider, *opRecorder) {
	t.Helper()
	ops := &opRecorder{next: responses.NewAPIKeyTransport("test-key", "", srv.Client().Transport)}
	c, err := responses.NewClient(srv.BaseURL(), &http.Client{Transport: ops}, responses.WithProject(srv.Project()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := responses.NewProvider(c, a, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p, ops
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

func kinds(evs []brainwire.AgentEvent) string {
	var out []string
	for _, ev := range evs {
		s := ev.Kind.String()
		if ev.Kind == brainwire.AgentRunStatus {
			s += ":" + string(ev.Status)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func body(t *testing.T, r rt.Request) string {
	t.Helper()
	b, err := json.Marshal(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const fileArgs = `{"bucket":"People"}`

func classifyTurn(id string, opts ...rt.TurnOption) rt.Response {
	return rt.Stream(rt.NewTurn(id, opts...).Reasoning("rs_1", "Calling", " mom: People.").
		FunctionCall("fc_1", "call_1", "file_capture", fileArgs).Complete(rt.Usage{Input: 100, Output: 20, Reasoning: 12}).Events()...)
}

func closingTurn(id string, opts ...rt.TurnOption) rt.Response {
	return rt.Stream(rt.NewTurn(id, opts...).Message("msg_2", "Filed to ", "People.").Complete(rt.Usage{Input: 130, Output: 5}).Events()...)
}

func TestRunInAConversation(t *testing.T) {
	conv := rt.InConversation("conv_1")
	srv := rt.NewServer(t,
		rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1","object":"conversation","created_at":1,"metadata":{}}`)),
		rt.Expect("POST /responses", classifyTurn("resp_1", conv)),
		rt.Expect("POST /responses", closingTurn("resp_2", conv, rt.After("resp_1"))),
	)
	p, ops := newProvider(t, srv, modelAgent, responses.WithReasoningSummary("auto"), responses.WithName(responses.ProviderNameFoundry))
	if p.Name() != "azure.ai.agents" {
		t.Errorf("name %q", p.Name())
	}
	evs, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{Message: "Call mom"}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	want := "run_status:in_progress run_status:in_progress text_chunk text_chunk tool_call usage run_status:requires_action tool_result " +
		"run_status:in_progress run_status:in_progress text_chunk text_chunk usage run_status:completed"
	if got := kinds(evs); got != want {
		t.Fatalf("events\n %s\nwant\n %s", got, want)
	}
	for _, ev := range evs {
		if ev.ThreadID != "conv_1" || ev.RunID == "" {
			t.Fatalf("event without ids: %+v", ev)
		}
	}
	if tc := evs[4].Tool; tc.ID != "call_1" || tc.ThreadID != "conv_1" || tc.RunID != "resp_1" || string(tc.Arguments) != fileArgs {
		t.Errorf("tool call %+v", tc)
	}
	if r := evs[7].Result; r.Output != `{"ok":"file_capture"}` || evs[7].RunID != "resp_1" {
		t.Errorf("tool result %+v", evs[7])
	}
	reqs := srv.Find("POST /responses")
	if got, want := body(t, reqs[0]), `{"conversation":"conv_1","input":[{"content":"Call mom","role":"user","type":"message"}],`+
		`"instructions":"You are the Classifier.","model":"gpt-5-mini","reasoning":{"summary":"auto"},"store":true,"stream":true,`+
		`"tools":[{"description":"File the capture.","name":"file_capture","parameters":{"properties":{"bucket":{"type":"string"}},"required":["bucket"],"type":"object"},"strict":false,"type":"function"}]}`; got != want {
		t.Errorf("first request\n %s\nwant\n %s", got, want)
	}
	if got, want := body(t, reqs[1]), `{"conversation":"conv_1","input":[{"call_id":"call_1","output":"{\"ok\":\"file_capture\"}","type":"function_call_output"}],`+
		`"instructions":"You are the Classifier.","model":"gpt-5-mini","reasoning":{"summary":"auto"},"store":true,"stream":true,`+
		`"tools":[{"description":"File the capture.","name":"file_capture","parameters":{"properties":{"bucket":{"type":"string"}},"required":["bucket"],"type":"object"},"strict":false,"type":"function"}]}`; got != want {
		t.Errorf("continuation\n %s\nwant\n %s", got, want)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization %q", got)
	}
	if got, want := ops.names(), "create_conversation[ ] create_response[conv_1 ] create_response[conv_1 ]"; got != want {
		t.Errorf("operations %s, want %s", got, want)
	}
}

func TestRunChainedByPreviousResponse(t *testing.T) {
	srv := rt.NewServer(t,
		rt.Expect("POST /responses", classifyTurn("resp_1")),
		rt.Expect("POST /responses", closingTurn("resp_2", rt.After("resp_1"))),
	)
	p, ops := newProvider(t, srv, modelAgent, responses.WithChaining(responses.ChainPreviousResponse))
	evs, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{Message: "Call mom"}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	if tc := evs[4].Tool; tc.ThreadID != "resp_1" {
		t.Errorf("without a conversation, the call's thread is the response that asked: %+v", tc)
	}
	reqs := srv.Find("POST /responses")
	if _, ok := reqs[0].Body["previous_response_id"]; ok || reqs[1].Body["previous_response_id"] != "resp_1" {
		t.Errorf("previous_response_id: %v then %v", reqs[0].Body["previous_response_id"], reqs[1].Body["previous_response_id"])
	}
	if _, ok := reqs[1].Body["conversation"]; ok {
		t.Error("conversation sent")
	}
	if _, ok := reqs[0].Body["reasoning"]; ok {
		t.Error("reasoning sent without a summary configured")
	}
	if got, want := ops.names(), "create_response[ ] create_response[ resp_1]"; got != want {
		t.Errorf("operations %s, want %s", got, want)
	}
}

func TestRunFoundryAgent(t *testing.T) {
	conv := rt.InConversation("conv_9")
	srv := rt.NewServer(t,
		rt.Expect("POST /responses", classifyTurn("resp_1", conv, rt.ForAgent("classifier"))),
		rt.Expect("POST /responses", closingTurn("resp_2", conv, rt.ForAgent("classifier"))),
	)
	p, _ := newProvider(t, srv, responses.Agent{Name: "classifier", Version: "3"}, responses.WithReasoningSummary("auto"))
	_, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{
		ThreadID: "conv_9", Message: "I meant my sister", AdditionalInstructions: "This answers your question.",
	}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range srv.Find("POST /responses") {
		b := body(t, r)
		if !strings.Contains(b, `"agent_reference":{"name":"classifier","type":"agent_reference","version":"3"}`) {
			t.Errorf("request %d names no agent: %s", i, b)
		}
		for _, k := range []string{"model", "instructions", "tools", "reasoning", "tool_choice"} {
			if _, ok := r.Body[k]; ok {
				t.Errorf("request %d sends %s with an agent reference: %s", i, k, b)
			}
		}
	}
	first := body(t, srv.Find("POST /responses")[0])
	if !strings.Contains(first, `"input":[{"content":"This answers your question.\n\nI meant my sister","role":"user","type":"message"}]`) {
		t.Errorf("an agent's follow-up takes the run's instructions in the message: %s", first)
	}
}

func TestFollowUpInAConversation(t *testing.T) {
	conv := rt.InConversation("conv_7")
	srv := rt.NewServer(t,
		rt.Expect("POST /responses", classifyTurn("resp_3", conv)),
		rt.Expect("POST /responses", closingTurn("resp_4", conv)),
	)
	p, _ := newProvider(t, srv, modelAgent)
	_, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{
		ThreadID: "conv_7", Message: "my sister", AdditionalInstructions: "Round 1 of 3.",
	}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	r := srv.Find("POST /responses")[0]
	if got := body(t, r); !strings.Contains(got, `"conversation":"conv_7","input":[{"content":"Round 1 of 3.","role":"developer","type":"message"},{"content":"my sister","role":"user","type":"message"}]`) ||
		r.Body["instructions"] != "You are the Classifier." {
		t.Errorf("follow-up request %s", got)
	}
}

func TestFollowUpAfterAPreviousResponse(t *testing.T) {
	stored := `{"id":"resp_A","object":"response","status":"completed","output":[` +
		`{"type":"reasoning","id":"rs_1","summary":[]},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_A","name":"file_capture","arguments":"{}","status":"completed"}]}`
	srv := rt.NewServer(t,
		rt.Expect("GET /responses/{id}", rt.JSON(200, stored)),
		rt.Expect("POST /responses", classifyTurn("resp_B", rt.After("resp_A"))),
		rt.Expect("POST /responses", closingTurn("resp_C", rt.After("resp_B"))),
	)
	p, ops := newProvider(t, srv, modelAgent, responses.WithChaining(responses.ChainPreviousResponse))
	_, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{ThreadID: "resp_A", Message: "my sister"}, echoTools()))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Path; got != "/responses/resp_A" {
		t.Errorf("fetched %s", got)
	}
	r := srv.Find("POST /responses")[0]
	in, _ := json.Marshal(r.Body["input"])
	if r.Body["previous_response_id"] != "resp_A" || !strings.HasPrefix(string(in), `[{"call_id":"call_A","output":"{\"status\":\"superseded\"`) ||
		!strings.HasSuffix(string(in), `{"content":"my sister","role":"user","type":"message"}]`) {
		t.Errorf("the follow-up answers the stored response's call, then speaks: %s", body(t, r))
	}
	if got, want := ops.names(), "get_response[ resp_A] create_response[ resp_A] create_response[ resp_B]"; got != want {
		t.Errorf("operations %s, want %s", got, want)
	}
}

func TestFollowUpOfAClassicThread(t *testing.T) {
	srv := rt.NewServer(t)
	p, _ := newProvider(t, srv, modelAgent)
	_, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{ThreadID: "thread_abc", Message: "x"}, nil))
	var be *brainwire.Error
	if !errors.As(err, &be) || be.Code != brainwire.EUpstream || !strings.Contains(be.Message, "classic Agents API") {
		t.Fatalf("error %v", err)
	}
}

// TestRunParallelCalls: the outputs of a response's calls go back in one
// request, in the order of the calls.
func TestRunParallelCalls(t *testing.T) {
	turn := rt.NewTurn("resp_1").FunctionCall("fc_1", "call_1", "transcribe_audio", `{"n":1}`).
		FunctionCall("fc_2", "call_2", "file_capture", `{"n":2}`).Complete(rt.Usage{})
	srv := rt.NewServer(t,
		rt.Expect("POST /responses", rt.Stream(turn.Events()...)),
		rt.Expect("POST /responses", closingTurn("resp_2")),
	)
	p, _ := newProvider(t, srv, modelAgent, responses.WithChaining(responses.ChainPreviousResponse))
	ts := echoTools()
	ts.call = func(_ context.Context, c brainwire.ToolCall) brainwire.ToolResult {
		return brainwire.ToolResult{CallID: c.ID, Name: c.Name, Output: string(c.Arguments)}
	}
	evs, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{Message: "x"}, ts))
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, ev := range evs {
		if ev.Kind == brainwire.AgentToolResult {
			results = append(results, ev.Tool.ID)
		}
	}
	if fmt.Sprint(results) != "[call_1 call_2]" {
		t.Errorf("results in order %v", results)
	}
	in, _ := json.Marshal(srv.Find("POST /responses")[1].Body["input"])
	if string(in) != `[{"call_id":"call_1","output":"{\"n\":1}","type":"function_call_output"},{"call_id":"call_2","output":"{\"n\":2}","type":"function_call_output"}]` {
		t.Errorf("outputs %s", in)
	}
}

// TestRunUpstreamFaults: every way the service can fail ends the run with
// an error the phone can be told, or with the events that say it.
func TestRunUpstreamFaults(t *testing.T) {
	cases := []struct {
		name   string
		script []rt.Call
		kinds  string // the events' kinds
		err    string // a substring of the error; "" for none
	}{
		{
			name:   "429 on the conversation",
			script: []rt.Call{rt.Expect("POST /conversations", rt.Error(429, "rate_limit_exceeded", "Rate limit is exceeded."))},
			err:    "429 Too Many Requests (rate_limit_exceeded): Rate limit is exceeded.",
		},
		{
			name: "500 on the response",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Raw(500, "text/html", "<html>upstream down</html>"))},
			err: "500 Internal Server Error: <html>upstream down</html>",
		},
		{
			name:   "a conversation without an id",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{}`))},
			err:    "without an id",
		},
		{
			name: "the connection resets in the middle of an event",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Stream(append(rt.NewTurn("resp_1").Events(), rt.Cut(rt.Event{Name: "response.output_text.delta", Data: `{"delta":"hello there"}`}))...))},
			kinds: "run_status:in_progress run_status:in_progress",
			err:   "event stream broke off",
		},
		{
			name: "[DONE] before the response finished",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Stream(append(rt.NewTurn("resp_1").Events(), rt.Done())...))},
			kinds: "run_status:in_progress run_status:in_progress",
			err:   "ended the stream before the run finished",
		},
		{
			name: "a malformed event",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Stream(append(rt.NewTurn("resp_1").Events(), rt.Event{Name: "response.output_text.delta", Data: `{"delta":`})...))},
			kinds: "run_status:in_progress run_status:in_progress",
			err:   "decoding response.output_text.delta event",
		},
		{
			name: "response.failed",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_1").Fail("server_error", "boom").Events()...))},
			kinds: "run_status:in_progress run_status:in_progress run_status:failed",
		},
		{
			name: "response.incomplete",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_1").Incomplete("content_filter", rt.Usage{Input: 3}).Events()...))},
			kinds: "run_status:in_progress run_status:in_progress usage run_status:incomplete",
		},
		{
			name: "an error event",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_1").Error("server_error", "oops").Events()...))},
			kinds: "run_status:in_progress run_status:in_progress error",
		},
		{
			name: "the tool round's response fails",
			script: []rt.Call{rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
				rt.Expect("POST /responses", classifyTurn("resp_1")),
				rt.Expect("POST /responses", rt.Error(400, "invalid_request_error", "No tool output found for function call call_1."))},
			kinds: "run_status:in_progress run_status:in_progress text_chunk text_chunk tool_call usage run_status:requires_action tool_result",
			err:   "No tool output found for function call call_1.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := rt.NewServer(t, c.script...)
			p, _ := newProvider(t, srv, modelAgent)
			evs, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{Message: "x"}, echoTools()))
			if got := kinds(evs); got != c.kinds {
				t.Errorf("events %q, want %q", got, c.kinds)
			}
			if c.err == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			// A service that asks to be called later is busy, for the phone.
			code := brainwire.EUpstream
			if strings.HasPrefix(c.err, "429") {
				code = brainwire.EBusy
			}
			var be *brainwire.Error
			if !errors.As(err, &be) || be.Code != code || be.Message == "" {
				t.Fatalf("error %v is not a %s error for the phone", err, code)
			}
			if !strings.Contains(err.Error(), c.err) && !strings.Contains(be.Message, c.err) {
				t.Fatalf("error %v (for the phone: %q), want %q", err, be.Message, c.err)
			}
		})
	}
}

// TestRunHangPastDeadline: a response that stops streaming is abandoned
// when the run's time is up, and its connection closed.
func TestRunHangPastDeadline(t *testing.T) {
	srv := rt.NewServer(t,
		rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
		rt.Expect("POST /responses", rt.Stream(append(rt.NewTurn("resp_1").Reasoning("rs", "thinking").Events()[:4], rt.Hang())...)),
	)
	p, _ := newProvider(t, srv, modelAgent)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := collect(t, runAgent(ctx, p, brainwire.RunRequest{Message: "x"}, echoTools()))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "resp_1 stopped") {
		t.Fatalf("error %v", err)
	}
	select {
	case <-srv.Gone():
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging stream was not closed")
	}
}

// TestRunConsumerStopsEarly: when the consumer stops (the phone went
// away), the stream is closed and nothing more is asked.
func TestRunConsumerStopsEarly(t *testing.T) {
	srv := rt.NewServer(t,
		rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1"}`)),
		rt.Expect("POST /responses", rt.Stream(append(rt.NewTurn("resp_1").Reasoning("rs", "a", "b").Events(), rt.Hang())...)),
	)
	p, _ := newProvider(t, srv, modelAgent)
	n := 0
	for ev, err := range runAgent(context.Background(), p, brainwire.RunRequest{Message: "x"}, echoTools()) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; ev.Kind == brainwire.AgentTextChunk {
			break
		}
	}
	select {
	case <-srv.Gone():
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was not closed")
	}
}

// TestPing: a health check makes one cheap call that names what the agent
// is named by: the Foundry agent, the project's model deployment, or the
// model; an unknown one reads as ENotFound. Every call on a health
// check's context is named as a probe.
func TestPing(t *testing.T) {
	srv := rt.NewServer(t,
		rt.Expect("GET /agents/classifier/versions/3", rt.JSON(200, `{"object":"agent.version","id":"classifier:3","name":"classifier","version":"3"}`)),
		rt.Expect("GET /agents/classifier", rt.Error(404, "not_found", "Agent classifier not found.")),
		rt.Expect("GET /deployments/gpt-5-mini", rt.Deployment("gpt-5-mini", "gpt-5-mini")),
		rt.Expect("GET /deployments/gpt-5-mini", rt.Error(404, "DeploymentNotFound", "Deployment gpt-5-mini not found.")),
		rt.Expect("GET /models/gpt-5-mini", rt.Model("gpt-5-mini")),
		rt.Expect("GET /models/gpt-5-mini", rt.Error(404, "model_not_found", "The model `gpt-5-mini` does not exist.")),
		rt.Expect("GET /models", rt.JSON(200, `{"object":"list","data":[{"id":"gpt-4.1-mini","object":"model","created":1744316542,"owned_by":"system"}]}`)),
		rt.Expect("GET /models", rt.Error(401, "invalid_api_key", "Access denied due to invalid subscription key or wrong API endpoint.")),
	)
	probe := brainwire.WithHealthProbe(t.Context())
	agent, ops := newProvider(t, srv, responses.Agent{Name: "classifier", Version: "3"})
	if err := agent.Ping(probe); err != nil {
		t.Fatal(err)
	}
	if q := srv.Requests()[0].Query.Encode(); q != "api-version=v1" {
		t.Errorf("agents call query %q", q)
	}
	if got := ops.names(); got != "health_probe[ ]" {
		t.Errorf("the probe's call is named %s", got)
	}
	latest, _ := newProvider(t, srv, responses.Agent{Name: "classifier"})
	if err := latest.Ping(probe); err == nil || !strings.Contains(err.Error(), "not found") || brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Fatalf("ping of a missing agent: %v", err)
	}
	// An agent brainwire defines, in a Foundry project: its deployment.
	model, _ := newProvider(t, srv, modelAgent)
	if err := model.Ping(probe); err != nil {
		t.Fatal(err)
	}
	if q := srv.Requests()[2].Query.Encode(); q != "api-version=v1" {
		t.Errorf("deployments call query %q", q)
	}
	if err := model.Ping(probe); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Fatalf("ping of a missing deployment: %v", err)
	}
	// Elsewhere: its model.
	c, _ := responses.NewClient(srv.BaseURL(), srv.Client())
	compat, _ := responses.NewProvider(c, modelAgent)
	if err := compat.Ping(probe); err != nil {
		t.Fatal(err)
	}
	if err := compat.Ping(probe); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Fatalf("ping of a missing model: %v", err)
	}
	// An Azure OpenAI resource, whose model is a deployment named as its
	// owner chose ("classifier-prod" here), which GET /models/{id} does
	// not know: the models are listed, proving endpoint and credentials.
	azure, _ := responses.NewProvider(c, responses.Agent{Model: "classifier-prod", Instructions: "Classify."}, responses.WithName(responses.ProviderNameAzureOpenAI))
	if err := azure.Ping(probe); err != nil {
		t.Fatalf("ping of an Azure OpenAI deployment: %v", err)
	}
	if err := azure.Ping(probe); brainwire.ErrorCode(err) != brainwire.EUpstreamAuth {
		t.Fatalf("ping with a refused key: %v (code %s)", err, brainwire.ErrorCode(err))
	}
}

func TestNewProviderValidates(t *testing.T) {
	c, err := responses.NewClient("https://example.com/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		agent responses.Agent
		opt   responses.ProviderOption
	}{
		"no agent":                {},
		"agent and model":         {agent: responses.Agent{Name: "a", Model: "m"}},
		"agent with instructions": {agent: responses.Agent{Name: "a", Instructions: "x"}},
		"unknown chaining":        {agent: modelAgent, opt: responses.WithChaining("threads")},
		"unknown summary":         {agent: modelAgent, opt: responses.WithReasoningSummary("verbose")},
	} {
		var opts []responses.ProviderOption
		if tc.opt != nil {
			opts = append(opts, tc.opt)
		}
		if _, err := responses.NewProvider(c, tc.agent, opts...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBaseURLs(t *testing.T) {
	if got := responses.ProjectBaseURL("https://r.services.ai.azure.com/api/projects/p/"); got != "https://r.services.ai.azure.com/api/projects/p/openai/v1" {
		t.Errorf("project base %q", got)
	}
	// A query on the base URL (Azure OpenAI's api-version) goes with every
	// call; a key may go in a header of its own (api-key).
	srv := rt.NewServer(t, rt.Expect("GET /models/gpt-5-mini", rt.Model("gpt-5-mini")))
	c, _ := responses.NewClient(srv.BaseURL()+"/?api-version=preview", &http.Client{Transport: responses.NewAPIKeyTransport("k-1", "api-key", srv.Client().Transport)})
	p, _ := responses.NewProvider(c, modelAgent)
	if err := p.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.Query.Encode() != "api-version=preview" || r.Header.Get("api-key") != "k-1" || r.Header.Get("Authorization") != "" {
		t.Errorf("query %q, headers %v", r.Query.Encode(), r.Header)
	}
}
