package adk_test

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
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/agent"
)

const (
	app     = "brainwire_classifier"
	user    = "u-1"
	session = "5b0d7a56-3c1e-4a3b-9f57-2f1f0c9c7e11"
)

// hangBound is how long a test waits for what must happen soon; only a
// broken build ever waits it out.
const hangBound = 10 * time.Second

// tools is a ToolSet for tests that records its calls.
type tools struct {
	names []string
	call  func(c brainwire.ToolCall) brainwire.ToolResult

	mu    sync.Mutex
	calls []brainwire.ToolCall
}

func (ts *tools) Definitions() []brainwire.ToolDefinition {
	defs := make([]brainwire.ToolDefinition, len(ts.names))
	for i, n := range ts.names {
		defs[i] = brainwire.ToolDefinition{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)}
	}
	return defs
}

func (ts *tools) Call(_ context.Context, c brainwire.ToolCall) brainwire.ToolResult {
	ts.mu.Lock()
	ts.calls = append(ts.calls, c)
	ts.mu.Unlock()
	return ts.call(c)
}

// filer files every capture into People.
func filer() *tools {
	return &tools{names: []string{brainwire.ToolFileCapture}, call: func(c brainwire.ToolCall) brainwire.ToolResult {
		f := &brainwire.FileCaptureResult{Bucket: "People", Confidence: 0.9, ItemID: "item-" + c.ID, Status: brainwire.StatusClassified}
		out, _ := json.Marshal(f)
		return brainwire.ToolResult{CallID: c.ID, Name: c.Name, Output: string(out), Filed: f}
	}}
}

func newProvider(t *testing.T, srv *adktest.Server) *adk.Provider {
	t.Helper()
	c, err := adk.NewClient(srv.URL(), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	p, err := adk.NewProvider(c, app)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runAgent runs the agent through p as the server does: in the agent loop.
func runAgent(ctx context.Context, p brainwire.Provider, req brainwire.RunRequest, tools brainwire.ToolSet) iter.Seq2[brainwire.AgentEvent, error] {
	return agent.NewLoop(p).Run(ctx, req, tools)
}

// collect runs the provider and returns its events rendered and the final
// error, checking that an error comes once, last, with a zero event.
func collect(t *testing.T, seq func(yield func(brainwire.AgentEvent, error) bool)) ([]string, error) {
	t.Helper()
	var evs []string
	var final error
	for ev, err := range seq {
		if final != nil {
			t.Fatalf("yielded after the error %v: %+v, %v", final, ev, err)
		}
		if err != nil {
			if !reflect.DeepEqual(ev, brainwire.AgentEvent{}) {
				t.Fatalf("error %v came with an event %+v", err, ev)
			}
			final = err
			continue
		}
		if ev.Kind == brainwire.AgentToolResult {
			evs = append(evs, fmt.Sprintf("tool_result [%s] %s %s", ev.RunID, ev.Tool.ID, ev.Result.Output))
			continue
		}
		evs = append(evs, render(ev))
	}
	return evs, final
}

func sessionCreated() adktest.Call {
	return adktest.Expect("POST /apps/{app}/users/{user}/sessions", adktest.JSON(http.StatusOK, adktest.Session(session, app, user)))
}

func TestRunHandsToolsOverAndResumes(t *testing.T) {
	shapes := map[string]func(adktest.Response) adktest.Response{
		"as written":      func(r adktest.Response) adktest.Response { return r },
		"crlf, in pieces": func(r adktest.Response) adktest.Response { return r.CRLF().Chunked(7) },
		"one byte a time": func(r adktest.Response) adktest.Response { return r.Chunked(1) },
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			srv := adktest.NewServer(t,
				sessionCreated(),
				adktest.Expect("POST /run_sse", shape(adktest.Stream(classify.Frames()...))),
				adktest.Expect("POST /run_sse", shape(adktest.Stream(confirm.Frames()...))),
			)
			ts := filer()
			got, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{
				UserID: user, Message: "Call mom about her birthday",
			}, ts))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"run_status in_progress",
				`text_chunk [e-1] "**Classifying**\n\n"`, `text_chunk [e-1] "It names Mom: "`, `text_chunk [e-1] "People 🎂."`,
				`text_chunk [e-1] "Filing it."`,
				"usage [e-1] 400/120/520",
				`tool_call [e-1] adk-1 file_capture {"text":"Call mom","bucket":"People"}`,
				"run_status [e-1] requires_action",
				`tool_result [e-1] adk-1 {"bucket":"People","confidence":0.9,"item_id":"item-adk-1","status":"classified"}`,
				"run_status [e-1] in_progress",
				`text_chunk [e-1] "Filed to"`, `text_chunk [e-1] " People."`,
				"usage [e-1] 600/10/610",
				"run_status [e-1] completed",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}

			if len(ts.calls) != 1 || ts.calls[0].ThreadID != session || ts.calls[0].RunID != "e-1" {
				t.Errorf("tool calls: %+v", ts.calls)
			}
			reqs := srv.Requests()
			if p := reqs[0].Path; p != "/apps/"+app+"/users/"+user+"/sessions" {
				t.Errorf("session created at %s", p)
			}
			first, resume := reqs[1].Body, reqs[2].Body
			wantFirst := map[string]any{"appName": app, "userId": user, "sessionId": session, "streaming": true,
				"newMessage": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Call mom about her birthday"}}}}
			if !reflect.DeepEqual(first, wantFirst) {
				t.Errorf("first /run_sse body:\n got  %v\n want %v", first, wantFirst)
			}
			wantResume := map[string]any{"appName": app, "userId": user, "sessionId": session, "streaming": true,
				"newMessage": map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
					"id": "adk-1", "name": "file_capture",
					"response": map[string]any{"bucket": "People", "confidence": 0.9, "item_id": "item-adk-1", "status": "classified"}}}}}}
			if !reflect.DeepEqual(resume, wantResume) {
				t.Errorf("resuming /run_sse body:\n got  %v\n want %v", resume, wantResume)
			}
			for _, r := range reqs[1:] {
				if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Origin") != "" {
					t.Errorf("%s headers: %v", r, r.Header)
				}
			}
		})
	}
}

func TestRunFollowUpContinuesTheSession(t *testing.T) {
	srv := adktest.NewServer(t,
		adktest.Expect("POST /run_sse", adktest.Stream(confirm.Frames()...)),
	)
	got, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{
		UserID: user, ThreadID: session, Message: "I meant my sister", AdditionalInstructions: "Round 1 of 3.",
	}, nil))
	if err != nil || got[len(got)-1] != "run_status [e-1] completed" {
		t.Fatalf("%q, %v", got, err)
	}
	body := srv.Requests()[0].Body
	if body["sessionId"] != session || !reflect.DeepEqual(body["stateDelta"], map[string]any{adk.InstructionsKey: "Round 1 of 3."}) {
		t.Fatalf("body %v: want the session and the instructions as state", body)
	}
}

func TestRunWithoutUserUsesTheDefault(t *testing.T) {
	srv := adktest.NewServer(t,
		adktest.Expect("POST /apps/"+app+"/users/"+adk.DefaultUserID+"/sessions", adktest.JSON(http.StatusOK, adktest.Session(session, app, adk.DefaultUserID))),
		adktest.Expect("POST /run_sse", adktest.Stream(confirm.Frames()...)),
	)
	if _, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{Message: "x"}, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestRunParallelCallsAnsweredInOneMessage(t *testing.T) {
	two := adktest.Turn{InvocationID: "e-2", EventID: "ev-2", Calls: []adktest.FunctionCall{
		{ID: "adk-a", Name: "file_capture", Args: `{"bucket":"People"}`}, {ID: "adk-b", Name: "lookup", Args: `{}`}}}
	srv := adktest.NewServer(t,
		sessionCreated(),
		adktest.Expect("POST /run_sse", adktest.Stream(two.Frames()...)),
		adktest.Expect("POST /run_sse", adktest.Stream(confirm.Frames()...)),
	)
	ts := &tools{names: []string{"file_capture"}, call: func(c brainwire.ToolCall) brainwire.ToolResult {
		if c.Name == "lookup" {
			return brainwire.ToolResult{Output: `"plain text"`}
		}
		return brainwire.ToolResult{Output: `{"ok":true}`}
	}}
	if _, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{UserID: user, Message: "x"}, ts)); err != nil {
		t.Fatal(err)
	}
	parts := srv.Requests()[2].Body["newMessage"].(map[string]any)["parts"].([]any)
	want := []any{
		map[string]any{"functionResponse": map[string]any{"id": "adk-a", "name": "file_capture", "response": map[string]any{"ok": true}}},
		map[string]any{"functionResponse": map[string]any{"id": "adk-b", "name": "lookup", "response": map[string]any{"result": "plain text"}}},
	}
	if !reflect.DeepEqual(parts, want) {
		t.Fatalf("responses:\n got  %v\n want %v", parts, want)
	}
}

func TestRunFaults(t *testing.T) {
	cut := adktest.Turn{InvocationID: "e-1", EventID: "ev-1", Thoughts: []string{"one", "two", "three"}}
	loop := adktest.Turn{InvocationID: "e-1", EventID: "ev-1", Calls: []adktest.FunctionCall{{ID: "adk-1", Name: "file_capture"}}}
	tests := []struct {
		name       string
		script     []adktest.Call
		wantLast   string // the last event before the end
		wantErr    string // "" when the run ends without an error
		wantDetail string // the message for people
	}{
		{
			name:       "the session cannot be created",
			script:     []adktest.Call{adktest.Expect("POST /apps/{a}/users/{u}/sessions", adktest.Detail(500, "database is locked"))},
			wantErr:    "creating a session of u-1 with brainwire_classifier: adk: 500 Internal Server Error: database is locked",
			wantDetail: "database is locked",
		},
		{
			name:       "the app is unknown",
			script:     []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.Detail(404, "Agent not found: 'brainwire_classifier'"))},
			wantErr:    "404 Not Found: Agent not found",
			wantDetail: "Agent not found: 'brainwire_classifier'",
		},
		{
			name: "the body fails validation",
			script: []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.JSON(422,
				`{"detail":[{"type":"missing","loc":["body","newMessage","parts",0,"functionResponse","id"],"msg":"Field required","input":{}}]}`))},
			wantErr:    "422 Unprocessable Entity: body.newMessage.parts.0.functionResponse.id: Field required",
			wantDetail: "body.newMessage.parts.0.functionResponse.id: Field required",
		},
		{
			name:       "the TypeScript server does not know the session",
			script:     []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.JSON(404, `{"error":"Session not found: `+session+`"}`))},
			wantErr:    "404 Not Found: Session not found: " + session,
			wantDetail: "Session not found: " + session,
		},
		{
			name: "an error frame that says nothing",
			script: []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(cut.Partials()[0],
				adktest.Frame{Data: `{"error":{"upstream":"10.0.0.7"}}`}))},
			wantLast:   `text_chunk [e-1] "one"`,
			wantErr:    `decoding event {"error":{"upstream":"10.0.0.7"}}`,
			wantDetail: "the agent server sent an event brainwire cannot read",
		},
		{
			name:       "the connection resets mid-event",
			script:     []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(cut.Partials()[0], adktest.Cut(cut.Partials()[1])))},
			wantLast:   `text_chunk [e-1] "one"`,
			wantErr:    "reading events of session " + session,
			wantDetail: "the agent server's event stream broke off",
		},
		{
			name:       "the stream ends mid-turn",
			script:     []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(cut.Partials()...))},
			wantLast:   `text_chunk [e-1] "three"`,
			wantErr:    "unexpected EOF",
			wantDetail: "the agent server's event stream ended before the agent finished",
		},
		{
			name: "an error frame",
			script: []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(cut.Partials()[0],
				adktest.ErrorFrame("ServerError", "503 UNAVAILABLE. The model is overloaded.")))},
			wantLast: "error [e-1] ServerError: 503 UNAVAILABLE. The model is overloaded.",
		},
		{
			name: "the resumed run refuses the responses",
			script: []adktest.Call{sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(loop.Frames()...)),
				adktest.Expect("POST /run_sse", adktest.Stream(adktest.ErrorFrame("ValueError", "Function call not found for function response ids: {'adk-1'}")))},
			wantLast: "error [e-1] ValueError: Function call not found for function response ids: {'adk-1'}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := adktest.NewServer(t, tt.script...)
			got, err := collect(t, runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{UserID: user, Message: "x"}, filer()))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.wantDetail != "" {
				var bw *brainwire.Error
				if !errors.As(err, &bw) || bw.Code != brainwire.EUpstream || bw.Message != tt.wantDetail {
					t.Errorf("read as %+v, want EUpstream %q", bw, tt.wantDetail)
				}
			}
			if tt.wantLast != "" && (len(got) == 0 || got[len(got)-1] != tt.wantLast) {
				t.Fatalf("events %q: want the last %q", got, tt.wantLast)
			}
		})
	}
}

// The provider closes the request when the run is cancelled, when the
// consumer stops, and a hung stream is ended by the run's context: the
// server sees its client go away, which stops the run there.
func TestRunClosesTheRequest(t *testing.T) {
	thinking := adktest.Turn{InvocationID: "e-1", EventID: "ev-1", Thoughts: []string{"one", "two"}}
	t.Run("cancelled while the stream hangs", func(t *testing.T) {
		srv := adktest.NewServer(t, sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(thinking.Partials()[0], adktest.Hang())))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var final error
		for ev, err := range runAgent(ctx, newProvider(t, srv), brainwire.RunRequest{UserID: user, Message: "x"}, nil) {
			if ev.Kind == brainwire.AgentTextChunk {
				cancel()
			}
			final = err
		}
		if !errors.Is(final, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", final)
		}
		waitGone(t, srv)
	})
	t.Run("the consumer stops", func(t *testing.T) {
		srv := adktest.NewServer(t, sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(thinking.Partials()[0], adktest.Hang())))
		for ev := range runAgent(t.Context(), newProvider(t, srv), brainwire.RunRequest{UserID: user, Message: "x"}, nil) {
			if ev.Kind == brainwire.AgentTextChunk {
				break
			}
		}
		waitGone(t, srv)
	})
	t.Run("the run's deadline passes while the stream hangs", func(t *testing.T) {
		srv := adktest.NewServer(t, sessionCreated(), adktest.Expect("POST /run_sse", adktest.Stream(adktest.Hang())))
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := collect(t, runAgent(ctx, newProvider(t, srv), brainwire.RunRequest{UserID: user, Message: "x"}, nil))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
		waitGone(t, srv)
	})
}

func waitGone(t *testing.T, srv *adktest.Server) {
	t.Helper()
	select {
	case r := <-srv.Gone():
		if r != "POST /run_sse" {
			t.Fatalf("%s was closed, want the run", r)
		}
	case <-time.After(hangBound):
		t.Fatal("the server never saw the request closed")
	}
}

func TestPing(t *testing.T) {
	tests := []struct {
		name     string
		resp     adktest.Response
		wantErr  string
		wantCode string
	}{
		{"the app is served", adktest.JSON(200, []string{"other", app}), "", ""},
		{"the app is missing", adktest.JSON(200, []string{"other"}), `lists ["other"], not brainwire_classifier`, brainwire.ENotFound},
		{"no such route", adktest.Detail(404, "Not Found"), "404 Not Found", brainwire.ENotFound},
		{"the server fails", adktest.Detail(500, "boom"), "500 Internal Server Error: boom", brainwire.EUpstream},
		{"the answer is not JSON", adktest.Raw(200, "text/html", "<html>"), "decoding response: invalid character", brainwire.EUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := adktest.NewServer(t, adktest.Expect("GET /list-apps", tt.resp))
			err := newProvider(t, srv).Ping(t.Context())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := brainwire.ErrorCode(err); got != tt.wantCode {
				t.Errorf("code %q, want %q", got, tt.wantCode)
			}
		})
	}
}
