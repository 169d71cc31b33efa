package simulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/responses/responseswire"
	"github.com/brainwire/brainwire/simulator"
)

const responsesPath = "/openai/v1"

// respond creates a streamed response and returns its events, checked
// against the API's streaming rules.
func (c *client) respond(body map[string]any) []frame {
	c.t.Helper()
	if _, ok := body["model"]; !ok && body["agent_reference"] == nil {
		body["model"] = "gpt-test"
	}
	frames := c.stream(responsesPath+"/responses", body)
	return frames
}

func (c *client) newConversation() string {
	c.t.Helper()
	var conv struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	c.call(http.MethodPost, responsesPath+"/conversations", map[string]any{}, http.StatusOK, &conv)
	if !strings.HasPrefix(conv.ID, "conv_") || conv.Object != "conversation" {
		c.t.Fatalf("conversation %+v", conv)
	}
	return conv.ID
}

// responsesTools are the tools the server sends, in the flat shape.
var responsesTools = []any{
	map[string]any{"type": "function", "name": "file_capture", "description": "File a capture.", "strict": false,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"bucket": map[string]any{"type": "string"}}}},
	map[string]any{"type": "function", "name": "transcribe_audio", "description": "Transcribe.", "strict": false,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"blob_url": map[string]any{"type": "string"}}}},
}

func userInput(text string) []any {
	return []any{map[string]any{"type": "message", "role": "user", "content": text}}
}

func firstRequest(conv, text string) map[string]any {
	return map[string]any{"conversation": conv, "input": userInput(text), "tools": responsesTools,
		"instructions": testInstructions, "reasoning": map[string]any{"summary": "auto"}, "store": true}
}

// final returns the response object of the stream's terminal event.
func final(t *testing.T, frames []frame) responseswire.Response {
	t.Helper()
	var ev struct {
		Response responseswire.Response `json:"response"`
	}
	if err := json.Unmarshal([]byte(frames[len(frames)-1].Data), &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Response
}

func calls(t *testing.T, r responseswire.Response) []responseswire.FunctionCallItem {
	t.Helper()
	var out []responseswire.FunctionCallItem
	for _, raw := range r.Output {
		var it responseswire.FunctionCallItem
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		if it.Type == "function_call" {
			out = append(out, it)
		}
	}
	return out
}

// texts returns the concatenated deltas of one event type.
func texts(frames []frame, typ string) (string, int) {
	var b strings.Builder
	n := 0
	for _, f := range frames {
		if f.Event == typ {
			var d struct{ Delta string }
			_ = json.Unmarshal([]byte(f.Data), &d)
			b.WriteString(d.Delta)
			n++
		}
	}
	return b.String(), n
}

func outputsFor(cs []responseswire.FunctionCallItem, output func(responseswire.FunctionCallItem) string) []any {
	var in []any
	for _, c := range cs {
		in = append(in, map[string]any{"type": "function_call_output", "call_id": c.CallID, "output": output(c)})
	}
	return in
}

func filed(c responseswire.FunctionCallItem) string {
	var a struct {
		Bucket, Status string
		Confidence     float64
	}
	_ = json.Unmarshal([]byte(c.Arguments), &a)
	return fmt.Sprintf(`{"bucket":%q,"confidence":%v,"item_id":"item_1","status":%q}`, a.Bucket, a.Confidence, a.Status)
}

// TestResponsesConversationItems: a conversation lists what its completed
// responses took in and gave out, as the API does: newest first by
// default, limit, order and after, in the list envelope.
func TestResponsesConversationItems(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	conv := c.newConversation()
	type item struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		CallID  string `json:"call_id"`
		Output  string `json:"output"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	type page struct {
		Object  string  `json:"object"`
		Data    []item  `json:"data"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		HasMore bool    `json:"has_more"`
	}
	list := func(query string) page {
		t.Helper()
		var p page
		c.call(http.MethodGet, responsesPath+"/conversations/"+conv+"/items"+query, nil, http.StatusOK, &p)
		return p
	}
	if p := list(""); p.Object != "list" || len(p.Data) != 0 || p.FirstID != nil || p.LastID != nil || p.HasMore {
		t.Fatalf("a new conversation's items: %+v", p)
	}
	r1 := final(t, c.respond(firstRequest(conv, "Call mom about her birthday on Sunday")))
	cs := calls(t, r1)
	c.respond(map[string]any{"conversation": conv, "input": outputsFor(cs, filed), "tools": responsesTools})

	kinds := func(items []item) string {
		var out []string
		for _, it := range items {
			k := it.Type
			if it.Role != "" {
				k += ":" + it.Role
			}
			out = append(out, k)
		}
		return strings.Join(out, " ")
	}
	asc := list("?order=asc")
	if got := kinds(asc.Data); got != "message:user reasoning function_call function_call_output message:assistant" {
		t.Fatalf("items, oldest first: %s", got)
	}
	user, out, closing := asc.Data[0], asc.Data[3], asc.Data[4]
	if !strings.HasPrefix(user.ID, "msg_") || len(user.Content) != 1 || user.Content[0].Type != "input_text" ||
		user.Content[0].Text != "Call mom about her birthday on Sunday" {
		t.Errorf("the user's message: %+v", user)
	}
	if !strings.HasPrefix(out.ID, "fco_") || out.CallID != cs[0].CallID || out.Output != filed(cs[0]) {
		t.Errorf("the function call's output: %+v", out)
	}
	if len(closing.Content) != 1 || closing.Content[0].Type != "output_text" || closing.Content[0].Text != "Filed to People." {
		t.Errorf("the closing message: %+v", closing)
	}
	if *asc.FirstID != user.ID || *asc.LastID != closing.ID || asc.HasMore {
		t.Errorf("envelope %v %v %v", *asc.FirstID, *asc.LastID, asc.HasMore)
	}
	desc := list("")
	if len(desc.Data) != 5 || desc.Data[0].ID != closing.ID || desc.Data[4].ID != user.ID {
		t.Errorf("by default, newest first: %s", kinds(desc.Data))
	}
	p := list("?limit=2")
	if len(p.Data) != 2 || p.Data[0].ID != closing.ID || !p.HasMore || *p.LastID != out.ID {
		t.Errorf("limit=2: %s, has_more %v", kinds(p.Data), p.HasMore)
	}
	p = list("?limit=2&after=" + *p.LastID)
	if len(p.Data) != 2 || p.Data[0].Type != "function_call" || !p.HasMore {
		t.Errorf("the next page: %s, has_more %v", kinds(p.Data), p.HasMore)
	}

	c.call(http.MethodGet, responsesPath+"/conversations/"+conv+"/items?limit=0", nil, http.StatusBadRequest, nil)
	c.call(http.MethodGet, responsesPath+"/conversations/"+conv+"/items?order=up", nil, http.StatusBadRequest, nil)
	c.call(http.MethodGet, responsesPath+"/conversations/conv_nope/items", nil, http.StatusNotFound, nil)
}

// TestResponsesFollowUpAfterAStoredResponse: chained by previous response,
// a follow-up branches from the response that filed, answering its call.
func TestResponsesFollowUpAfterAStoredResponse(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	r1 := final(t, c.respond(map[string]any{"input": userInput("hmm zzkx"), "tools": responsesTools}))
	cs := calls(t, r1)
	c.respond(map[string]any{"previous_response_id": r1.ID, "input": outputsFor(cs, filed), "tools": responsesTools})
	// Without answering the call, the chain cannot go on.
	c.call(http.MethodPost, responsesPath+"/responses", map[string]any{"model": "m", "previous_response_id": r1.ID,
		"input": userInput("my sister")}, http.StatusBadRequest, nil)
	in := append(outputsFor(cs, func(responseswire.FunctionCallItem) string { return `{"status":"superseded"}` }), userInput("I meant call my sister")...)
	r := final(t, c.respond(map[string]any{"previous_response_id": r1.ID, "input": in, "tools": responsesTools}))
	if cs2 := calls(t, r); len(cs2) != 1 || !strings.Contains(cs2[0].Arguments, `"bucket":"People"`) {
		t.Fatalf("%+v", cs2)
	}
}

func TestResponsesFoundryAgent(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	ref := map[string]any{"type": "agent_reference", "name": simulator.DefaultAgentName, "version": "1"}
	frames := c.respond(map[string]any{"agent_reference": ref, "input": userInput("Finish the launch deck before Friday")})
	r := final(t, frames)
	if cs := calls(t, r); len(cs) != 1 || !strings.Contains(cs[0].Arguments, `"bucket":"Projects"`) {
		t.Fatalf("%+v", r)
	}
	if _, n := texts(frames, "response.reasoning_summary_text.delta"); n == 0 {
		t.Fatal("the agent's definition asks for summaries")
	}
	if !strings.Contains(frames[0].Data, `"agent_reference":{"type":"agent_reference","name":"brainwire-classifier-sim","version":"1"}`) {
		t.Fatalf("created %s", frames[0].Data)
	}
	var agent struct {
		Object   string
		Versions struct {
			Latest struct {
				Version    string
				Definition struct{ Kind, Model string }
			}
		}
	}
	c.call(http.MethodGet, "/agents/"+simulator.DefaultAgentName, nil, http.StatusOK, &agent)
	if agent.Object != "agent" || agent.Versions.Latest.Version != "1" || agent.Versions.Latest.Definition.Kind != "prompt" {
		t.Fatalf("%+v", agent)
	}
	c.call(http.MethodGet, "/agents/"+simulator.DefaultAgentName+"/versions/1", nil, http.StatusOK, nil)
	c.call(http.MethodGet, "/agents/someone-else", nil, http.StatusNotFound, nil)

	// The project's deployment of the model, as a health check reads it.
	var dep struct{ Type, Name, ModelName string }
	c.call(http.MethodGet, "/deployments/"+simulator.DefaultModel, nil, http.StatusOK, &dep)
	if dep.Type != "ModelDeployment" || dep.Name != simulator.DefaultModel || dep.ModelName != simulator.DefaultModel {
		t.Fatalf("deployment %+v", dep)
	}
	c.call(http.MethodGet, "/deployments/another-model", nil, http.StatusNotFound, nil)
}

// TestResponsesPaths: the face answers on a Foundry project's, Azure
// OpenAI's and OpenAI's paths.
func TestResponsesPaths(t *testing.T) {
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	t.Cleanup(sim.Close)
	for _, base := range []string{sim.URL + "/api/projects/p/openai/v1", sim.URL + "/openai/v1", sim.URL + "/v1"} {
		c, err := responses.NewClient(base, &http.Client{Transport: responses.NewAPIKeyTransport("k", "", nil)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := responses.NewProvider(c, responses.Agent{Model: simulator.DefaultModel})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Ping(context.Background()); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
	}
}

// TestResponsesDisconnect: a client that leaves mid-stream abandons the
// response: it is cancelled and its conversation gains nothing.
func TestResponsesDisconnect(t *testing.T) {
	c, _ := newSim(t, simulator.Config{ChunkDelay: 20 * time.Millisecond})
	conv := c.newConversation()
	body := firstRequest(conv, "Call mom about her birthday")
	body["model"], body["stream"] = "m", true
	ctx, cancel := context.WithCancel(context.Background())
	resp := c.request(ctx, http.MethodPost, responsesPath+"/responses", body)
	r := newSSEReader(resp.Body)
	created, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Response responseswire.Response }
	_ = json.Unmarshal([]byte(created.Data), &ev)
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got responseswire.Response
		c.call(http.MethodGet, responsesPath+"/responses/"+ev.Response.ID, nil, http.StatusOK, &got)
		if got.Status == "cancelled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %s", got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var items struct{ Data []json.RawMessage }
	c.call(http.MethodGet, responsesPath+"/conversations/"+conv+"/items", nil, http.StatusOK, &items)
	if len(items.Data) != 0 {
		t.Fatalf("the conversation holds %d items", len(items.Data))
	}
	// The conversation has no pending call: a new message is taken.
	c.respond(firstRequest(conv, "Call mom about her birthday"))
}

func TestResponsesNotStreamed(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	var r responseswire.Response
	c.call(http.MethodPost, responsesPath+"/responses", map[string]any{"model": "m", "input": "Renew my passport", "tools": responsesTools},
		http.StatusOK, &r)
	if r.Status != "completed" || len(calls(t, r)) != 1 {
		t.Fatalf("%+v", r)
	}
}
