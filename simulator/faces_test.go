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
