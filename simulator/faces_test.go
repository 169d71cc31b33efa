package simulator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/simulator"
)

// turn is what a face's first turn on a capture came to, read the same
// way on every face.
type turn struct {
	end       string   // how it ended: "calls", "completed", "failed", "incomplete" or "error"
	code      string   // the failure's or error's code
	buckets   []string // the buckets file_capture was called with
	reasoning int      // reasoning chunks
	answer    string   // the text answer
}

// faces start a capture on each face and read its first turn.
var faces = []struct {
	name  string
	first func(t *testing.T, text string) turn
}{
	{"threads", func(t *testing.T, text string) turn {
		c, _ := newSim(t, simulator.Config{})
		s := c.createAndRun(text)
		var out turn
		if n := deltaCount(s); len(n) > 0 {
			out.reasoning = n[0]
		}
		if last := s[len(s)-1]; last.Event == "error" {
			var e struct{ Code string }
			_ = json.Unmarshal([]byte(last.Data), &e)
			return turn{end: "error", code: e.Code, reasoning: out.reasoning}
		}
		r := lastRun(t, s)
		switch r.Status {
		case "requires_action":
			out.end = "calls"
			_, calls := pendingCalls(t, s)
			for _, c := range calls {
				out.buckets = append(out.buckets, fileCall(t, c).Bucket)
			}
		case "failed":
			out.end, out.code = "failed", r.LastError.Code
		default:
			out.end = r.Status
			if m := messages(t, s); len(m) > 0 {
				out.answer = m[len(m)-1]
			}
		}
		return out
	}},
	{"responses", func(t *testing.T, text string) turn {
		c, _ := newSim(t, simulator.Config{})
		s := c.respond(firstRequest(c.newConversation(), text))
		var out turn
		_, out.reasoning = texts(s, "response.reasoning_summary_text.delta")
		if last := s[len(s)-1]; last.Event == "error" {
			var e struct{ Code string }
			_ = json.Unmarshal([]byte(last.Data), &e)
			return turn{end: "error", code: e.Code, reasoning: out.reasoning}
		}
		r := final(t, s)
		out.answer, _ = texts(s, "response.output_text.delta")
		for _, c := range calls(t, r) {
			var a fileArgs
			_ = json.Unmarshal([]byte(c.Arguments), &a)
			out.buckets = append(out.buckets, a.Bucket)
		}
		switch {
		case r.Status == "failed":
			out.end, out.code = "failed", r.Error.Code
		case r.Status == "incomplete":
			out.end, out.code = "incomplete", r.IncompleteDetails.Reason
		case len(out.buckets) > 0:
			out.end = "calls"
		default:
			out.end = r.Status
		}
		return out
	}},
	{"adk", func(t *testing.T, text string) turn {
		c, _ := newSim(t, simulator.Config{})
		evs, errFrame := c.run(runBody(c.session(), textMessage(text)))
		var out turn
		for _, ev := range evs {
			if p := ev.Content.Parts; partial(ev) && len(p) == 1 && p[0].Thought {
				out.reasoning++
			}
		}
		if errFrame != "" {
			var e adkwire.Event
			_ = json.Unmarshal([]byte(errFrame), &e)
			return turn{end: "error", code: e.ErrorDetails.ErrorType, reasoning: out.reasoning}
		}
		last := evs[len(evs)-1]
		_, out.buckets = adkCalls(last)
		switch {
		case last.ErrorCode != "":
			out.end, out.code = "failed", last.ErrorCode
		case len(out.buckets) > 0 && len(last.LongRunningToolIDs) == len(out.buckets):
			out.end = "calls"
		case len(out.buckets) == 0:
			out.end = "completed"
			for _, p := range last.Content.Parts {
				if !p.Thought {
					out.answer = p.Text
				}
			}
		}
		return out
	}},
}

// TestKnobsOnEveryFace: each magic phrase drives the same behaviour on
// every face, in that face's terms (see the package documentation).
func TestKnobsOnEveryFace(t *testing.T) {
	t.Parallel()
	projects := []string{"Projects"}
	cases := []struct {
		text string
		want map[string]turn // by face; a face not named does not know the phrase
		// answer, when set, is what each face's text answer contains.
		answer map[string]string
	}{
		{text: "Call mom about her birthday and the launch deadline #two-calls", want: map[string]turn{
			"threads": {end: "calls", buckets: []string{"People", "Projects"}}, "responses": {end: "calls", buckets: []string{"People", "Projects"}},
			"adk": {end: "calls", buckets: []string{"People", "Projects"}}}},
		{text: "Pay the electricity bill #invalid-bucket", want: map[string]turn{
			"threads": {end: "calls", buckets: []string{"Misc"}}, "responses": {end: "calls", buckets: []string{"Misc"}},
			"adk": {end: "calls", buckets: []string{"Misc"}}}},
		{text: "Call mom about her birthday #no-tool", want: map[string]turn{
			"threads": {end: "completed"}, "responses": {end: "completed"}, "adk": {end: "completed"}},
			answer: map[string]string{"threads": "without calling file_capture", "responses": "did not file it", "adk": "People, classified."}},
		{text: "Call mom about her birthday #fail", want: map[string]turn{
			"threads": {end: "failed", code: "server_error"}, "responses": {end: "failed", code: "server_error"},
			"adk": {end: "failed", code: "MALFORMED_FUNCTION_CALL"}}},
		{text: "Call mom about her birthday #error-event", want: map[string]turn{
			"threads": {end: "error", code: "server_error"}, "responses": {end: "error", code: "server_error"},
			"adk": {end: "error", code: "ServerError", reasoning: 3}}},
		{text: "Renew the passport #incomplete", want: map[string]turn{"responses": {end: "incomplete", code: "max_output_tokens"}}},
		{text: "Plan the product launch #long:40", want: map[string]turn{
			"threads": {end: "calls", buckets: projects, reasoning: 40}, "responses": {end: "calls", buckets: projects, reasoning: 40}, "adk": {end: "calls", buckets: projects, reasoning: 40}}},
		{text: "Plan the product launch #long:300", want: map[string]turn{"threads": {end: "calls", buckets: projects, reasoning: 300}}},
	}
	for _, tc := range cases {
		for _, f := range faces {
			want, ok := tc.want[f.name]
			if !ok {
				continue
			}
			t.Run(f.name+"/"+tc.text, func(t *testing.T) {
				got := f.first(t, tc.text)
				if got.end != want.end || got.code != want.code || strings.Join(got.buckets, ",") != strings.Join(want.buckets, ",") ||
					(want.reasoning > 0 && got.reasoning != want.reasoning) {
					t.Errorf("got %+v, want %+v", got, want)
				}
				if a := tc.answer[f.name]; !strings.Contains(got.answer, a) {
					t.Errorf("answer %q does not say %q", got.answer, a)
				}
			})
		}
	}
}

// TestWithoutFileCaptureTheAgentAnswers: without file_capture on offer,
// or with tool_choice "none", the agent can only answer in text.
func TestWithoutFileCaptureTheAgentAnswers(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	for name, extra := range map[string]map[string]any{
		"tool_choice none": {"tool_choice": "none", "tools": json.RawMessage(testTools)},
		"no file_capture":  {"tools": []any{}},
	} {
		t.Run(name, func(t *testing.T) {
			body := map[string]any{"assistant_id": testAgent, "thread": map[string]any{"messages": []any{userMessage("Call mom")}}}
			for k, v := range extra {
				body[k] = v
			}
			wantShape(t, c.stream("/threads/runs", body), seq([]string{"thread.created"}, runStart, messageStep, toCompletion)...)
		})
	}
	var got struct{ Status string }
	c.call(http.MethodPost, responsesPath+"/responses", map[string]any{"model": "m", "input": "Call mom", "tool_choice": "none"}, http.StatusOK, &got)
	if got.Status != "completed" {
		t.Errorf("response %+v", got)
	}
}

// TestEvictsLeastRecentlyUsedOnEveryFace: beyond Config.MaxThreads
// threads, conversations or sessions, the least recently used go first;
// stored responses are kept four times as many.
func TestEvictsLeastRecentlyUsedOnEveryFace(t *testing.T) {
	t.Parallel()
	auth := []string{"Authorization", "Bearer x"}
	for _, f := range []struct{ name, create, get string }{
		{"threads", simulator.ProjectPath + "/threads", "?api-version=v1"},
		{"conversations", simulator.ProjectPath + responsesPath + "/conversations", ""},
		{"sessions", "/apps/brainwire_classifier/users/u-1/sessions", ""},
	} {
		t.Run(f.name, func(t *testing.T) {
			c, _ := newSim(t, simulator.Config{MaxThreads: 2})
			status := func(id string) int {
				s, _, _ := c.do(http.MethodGet, f.create+"/"+id+f.get, nil, auth...)
				return s
			}
			ids := make([]string, 3)
			for i := range ids {
				_, _, b := c.do(http.MethodPost, f.create+f.get, map[string]any{}, auth...)
				var obj struct{ ID string }
				if err := json.Unmarshal(b, &obj); err != nil || obj.ID == "" {
					t.Fatalf("create: %s", b)
				}
				ids[i] = obj.ID
				if i == 1 {
					status(ids[0]) // ids[0] is now the newer one
				}
			}
			if got := []int{status(ids[0]), status(ids[1]), status(ids[2])}; got[0] != 200 || got[1] != 404 || got[2] != 200 {
				t.Errorf("after a third: %v, want the second evicted", got)
			}
		})
	}
	t.Run("responses", func(t *testing.T) {
		c, _ := newSim(t, simulator.Config{MaxThreads: 3})
		var ids []string
		for range 13 {
			var r struct{ ID string }
			c.call(http.MethodPost, responsesPath+"/responses", map[string]any{"model": "m", "input": "Renew my passport #no-tool"}, http.StatusOK, &r)
			ids = append(ids, r.ID)
		}
		c.call(http.MethodGet, responsesPath+"/responses/"+ids[0], nil, http.StatusNotFound, nil)
		c.call(http.MethodGet, responsesPath+"/responses/"+ids[12], nil, http.StatusOK, nil)
	})
}

// TestErrorsOnEveryFace: each face answers what it refuses in its
// service's shape: {"error":{…}} on the Foundry faces, FastAPI's
// {"detail": …} on ADK.
func TestErrorsOnEveryFace(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	conv := c.newConversation()
	r1 := final(t, c.respond(firstRequest(conv, "Call mom")))
	const threads, resp = simulator.ProjectPath + "/threads", simulator.ProjectPath + responsesPath
	bearer, ref := []string{"Authorization", "Bearer x"}, map[string]any{"type": "agent_reference", "name": simulator.DefaultAgentName}
	nested := []any{map[string]any{"type": "function", "function": map[string]any{"name": "file_capture"}}}
	adkBody := func(m map[string]any) map[string]any {
		return map[string]any{"appName": "brainwire_classifier", "userId": "u", "sessionId": "s-1", "newMessage": m}
	}
	cases := []struct {
		name, method, path string
		body               any
		header             []string
		status             int
		want               string // in the body
	}{
		{"threads: no api-version", "POST", threads + "/runs", map[string]any{}, bearer, 400, "MissingApiVersionParameter"},
		{"threads: no token", "GET", threads + "/thread_x?api-version=v1", nil, nil, 401, `"unauthorized"`},
		{"threads: not a bearer token", "GET", threads + "/thread_x?api-version=v1", nil, []string{"Authorization", "Basic abc"}, 401, `"unauthorized"`},
		{"threads: unknown thread's run", "GET", threads + "/thread_nope/runs/run_nope?api-version=v1", nil, bearer, 404, `"not_found"`},
		{"threads: run on an unknown thread", "POST", threads + "/thread_nope/runs?api-version=v1", map[string]any{"assistant_id": testAgent}, bearer, 404, `"not_found"`},
		{"threads: unknown thread's messages", "GET", threads + "/thread_nope/messages?api-version=v1", nil, bearer, 404, `"not_found"`},
		{"threads: no assistant", "POST", threads + "/runs?api-version=v1", map[string]any{"stream": true}, bearer, 400, `"invalid_request"`},
		{"threads: a bare path", "GET", "/assistants/" + simulator.DefaultAgentID + "?api-version=v1", nil, bearer, 200, `"object":"assistant"`},
		{"responses: no model", "POST", resp + "/responses", map[string]any{"input": "hi"}, bearer, 400, "Missing required parameter: 'model'."},
		{"responses: no input", "POST", resp + "/responses", map[string]any{"model": "m"}, bearer, 400, "'input'"},
		{"responses: conversation and previous response", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "conversation": conv, "previous_response_id": r1.ID}, bearer, 400, "in conjunction with conversation"},
		{"responses: unknown previous response", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "previous_response_id": "resp_nope"}, bearer, 404, "Previous response with id 'resp_nope' not found."},
		{"responses: unknown conversation", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "conversation": "conv_nope"}, bearer, 404, "Conversation with id 'conv_nope' not found."},
		{"responses: a pending call not answered", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "conversation": conv}, bearer, 400, "No tool output found for function call call_"},
		{"responses: an output for no call", "POST", resp + "/responses", map[string]any{"model": "m", "conversation": conv, "input": []any{
			map[string]any{"type": "function_call_output", "call_id": "call_nope", "output": "{}"}}}, bearer, 400, "No tool call found for function call output with call_id call_nope."},
		{"responses: Chat Completions tool shape", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "tools": nested}, bearer, 400, "Missing required parameter: 'tools[0].name'."},
		{"responses: tools with an agent", "POST", resp + "/responses", map[string]any{"agent_reference": ref, "input": "x", "tools": responsesTools}, bearer, 400, "Not allowed when agent is specified."},
		{"responses: an unknown agent", "POST", resp + "/responses", map[string]any{"agent_reference": map[string]any{"type": "agent_reference", "name": "x"}, "input": "x"}, bearer, 404, "Agent x was not found."},
		{"responses: an unknown item type", "POST", resp + "/responses", map[string]any{"model": "m", "input": []any{map[string]any{"type": "item_reference", "id": "x"}}}, bearer, 400, "not supported"},
		{"responses: a bad role", "POST", resp + "/responses", map[string]any{"model": "m", "input": []any{map[string]any{"role": "robot", "content": "x"}}}, bearer, 400, "Invalid value: 'robot'"},
		{"responses: background", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "background": true}, bearer, 400, "Background responses"},
		{"responses: not JSON", "POST", resp + "/responses", "{", bearer, 400, "not valid JSON"},
		{"responses: too long a message", "POST", resp + "/responses", map[string]any{"model": "m", "input": strings.Repeat("a", 40000)}, bearer, 400, "over 32768 characters"},
		{"responses: too large a body", "POST", resp + "/responses", map[string]any{"model": "m", "input": "x", "metadata": map[string]string{"pad": strings.Repeat("a", 1<<20)}}, bearer, 413, "over 1048576 bytes"},
		{"responses: no credentials", "GET", resp + "/models", nil, nil, 401, `"invalid_api_key"`},
		{"responses: not a bearer token", "GET", resp + "/models", nil, []string{"Authorization", "Basic x"}, 401, `"invalid_api_key"`},
		{"responses: an api-key", "GET", resp + "/models", nil, []string{"api-key", "k"}, 200, `"object":"list"`},
		{"adk: list apps", "GET", "/list-apps", nil, nil, 200, `["brainwire_classifier"]`},
		{"adk: unknown app", "POST", "/apps/other/users/u/sessions", map[string]any{}, nil, 404, `{"detail":"Agent not found: 'other'"}`},
		{"adk: a private app", "POST", "/apps/__x/users/u/sessions", map[string]any{}, nil, 403, `"detail"`},
		{"adk: a chosen session id", "POST", "/apps/brainwire_classifier/users/u/sessions", map[string]any{"sessionId": "s-1"}, nil, 200, `"id":"s-1"`},
		{"adk: the same id again", "POST", "/apps/brainwire_classifier/users/u/sessions", map[string]any{"sessionId": "s-1"}, nil, 409, `{"detail":"Session already exists: s-1"}`},
		{"adk: wrong method", "GET", "/run_sse", nil, nil, 405, `{"detail":"Method Not Allowed"}`},
		{"adk: unknown route", "GET", "/apps/x", nil, nil, 404, `{"detail":"Not Found"}`},
		{"adk: a browser's cross-site post", "POST", "/run_sse", map[string]any{}, []string{"Origin", "https://evil.example"}, 403, "Forbidden: origin not allowed"},
		{"adk: unknown session", "POST", "/run_sse", runBody("nope", textMessage("hi")), nil, 404, `{"detail":"Session not found: nope"}`},
		{"adk: no user", "POST", "/run_sse", map[string]any{"appName": "brainwire_classifier", "sessionId": "s"}, nil, 422, `"loc":["body","userId"]`},
		{"adk: streaming not a boolean", "POST", "/run_sse", map[string]any{"appName": "brainwire_classifier", "userId": "u", "sessionId": "s", "streaming": "yes"}, nil, 422, `"loc":["body","streaming"]`},
		{"adk: no app", "POST", "/run_sse", map[string]any{"userId": "u", "sessionId": "s", "newMessage": textMessage("hi")}, nil, 400, "app_name is required"},
		{"adk: not JSON", "POST", "/run_sse", "{", nil, 422, `"detail":[`},
		{"adk: an unknown member in the message", "POST", "/run_sse", adkBody(map[string]any{"role": "user", "parts": []any{map[string]any{"txt": "hi"}}}), nil, 422, "unknown field"},
		{"adk: a function call in the message", "POST", "/run_sse", adkBody(map[string]any{"role": "user", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "f"}}}}), nil, 422, "cannot contain function calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := c.do(tc.method, tc.path, tc.body, tc.header...)
			foundry := !strings.HasPrefix(tc.name, "adk")
			if status != tc.status || !strings.Contains(string(b), tc.want) || (foundry && status >= 400 && !isServiceError(b)) {
				t.Fatalf("%d %s, want %d with %s", status, b, tc.status, tc.want)
			}
		})
	}
}
