package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	oai "github.com/openai/openai-go/v3/responses"

	"github.com/brainwire/brainwire/simulator"
)

// TestSDKReadsTheSimulator drives the simulator's Responses face through
// captures of every kind and parses each stream with the official SDK's
// decoder and event union: no error, every event's type is the one it
// was sent as, the deltas add up to the done texts, function calls and
// usage read back from response.completed, and stored responses and
// conversations, and a conversation's items page by page, decode into
// the SDK's types.
func TestSDKReadsTheSimulator(t *testing.T) {
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	t.Cleanup(sim.Close)
	base := sim.URL + simulator.ProjectPath + "/openai/v1"
	sdk := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("x"), option.WithHTTPClient(sim.Client()))
	post := func(path string, body any) *http.Response {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		resp, err := sim.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return resp
	}
	tools := []any{
		map[string]any{"type": "function", "name": "file_capture", "strict": false, "parameters": map[string]any{"type": "object"}},
		map[string]any{"type": "function", "name": "transcribe_audio", "strict": false, "parameters": map[string]any{"type": "object"}},
	}
	// respond streams one response and returns what the SDK read.
	respond := func(body map[string]any) oai.Response {
		t.Helper()
		body["stream"], body["tools"], body["reasoning"] = true, tools, map[string]any{"summary": "auto"}
		if body["model"] == nil {
			body["model"] = simulator.DefaultModel
		}
		resp := post("/responses", body)
		var wire bytes.Buffer
		s := ssestream.NewStream[oai.ResponseStreamEventUnion](ssestream.NewDecoder(&http.Response{
			Header: resp.Header, Body: io.NopCloser(io.TeeReader(resp.Body, &wire))}), nil)
		texts := map[string]*strings.Builder{}
		var final oai.Response
		n := 0
		for s.Next() {
			ev := s.Current()
			if ev.Type == "" || ev.SequenceNumber != int64(n) {
				t.Fatalf("event %d: type %q, sequence %d", n, ev.Type, ev.SequenceNumber)
			}
			n++
			key := fmt.Sprint(ev.ItemID, ev.OutputIndex)
			switch ev.Type {
			case "response.reasoning_summary_text.delta", "response.output_text.delta", "response.function_call_arguments.delta":
				if texts[key] == nil {
					texts[key] = &strings.Builder{}
				}
				texts[key].WriteString(ev.Delta)
			case "response.reasoning_summary_text.done", "response.output_text.done":
				if got := texts[key].String(); got != ev.Text {
					t.Fatalf("%s: deltas %q, done %q", ev.Type, got, ev.Text)
				}
			case "response.function_call_arguments.done":
				if got := texts[key].String(); got != ev.Arguments {
					t.Fatalf("arguments: deltas %q, done %q", got, ev.Arguments)
				}
			case "response.completed", "response.failed", "response.incomplete":
				final = ev.AsResponseCompleted().Response
			case "error":
				final.Status = "error"
			}
		}
		resp.Body.Close()
		if err := s.Err(); err != nil {
			t.Fatalf("the SDK failed on the stream: %v\n%s", err, wire.String())
		}
		if n < 3 {
			t.Fatalf("%d events", n)
		}
		return final
	}
	calls := func(r oai.Response) []oai.ResponseFunctionToolCall {
		var out []oai.ResponseFunctionToolCall
		for _, it := range r.Output {
			if it.Type == "function_call" {
				out = append(out, it.AsFunctionCall())
			}
		}
		return out
	}
	answer := func(cs []oai.ResponseFunctionToolCall, output string) []any {
		var in []any
		for _, c := range cs {
			in = append(in, map[string]any{"type": "function_call_output", "call_id": c.CallID, "output": output})
		}
		return in
	}
	filed := `{"bucket":"People","confidence":0.9,"item_id":"i1","status":"classified"}`
	for _, text := range []string{
		"Call mom about her birthday on Sunday", "Ask Sarah about the deadline", "hmm zzkx", "Renew the passport #no-tool",
		"Renew the passport #fail", "Renew the passport #error-event", "Renew the passport #incomplete",
		"Call mom about the launch deadline #two-calls", "Pay the bill #invalid-bucket", "Plan the launch #long:300",
		"Lunch with 李明 🍜 at the 東京 café",
	} {
		t.Run(text, func(t *testing.T) {
			convResp := post("/conversations", map[string]any{})
			var c struct{ ID string }
			json.NewDecoder(convResp.Body).Decode(&c)
			convResp.Body.Close()
			r := respond(map[string]any{"conversation": c.ID, "input": text})
			for round := 0; len(calls(r)) > 0; round++ {
				if round > 3 {
					t.Fatal("too many rounds")
				}
				if r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || r.Usage.OutputTokensDetails.ReasoningTokens == 0 {
					t.Fatalf("usage %+v", r.Usage)
				}
				out := filed
				if strings.Contains(text, "#invalid-bucket") && round == 0 {
					out = `{"error":"invalid_bucket","message":"unknown bucket"}`
				}
				r = respond(map[string]any{"conversation": c.ID, "input": answer(calls(r), out)})
			}
			// The conversation's items read through the SDK's pager, two a
			// page: the person's message first, and every call answered.
			pager := sdk.Conversations.Items.ListAutoPaging(t.Context(), c.ID,
				conversations.ItemListParams{Limit: openai.Int(2), Order: conversations.ItemListParamsOrderAsc})
			var items []conversations.ConversationItemUnion
			for pager.Next() {
				items = append(items, pager.Current())
			}
			if err := pager.Err(); err != nil {
				t.Fatalf("the SDK failed on the conversation's items: %v", err)
			}
			if len(items) == 0 {
				return // the response did not complete: the conversation took nothing
			}
			if m := items[0].AsMessage(); m.Role != "user" || len(m.Content) != 1 || m.Content[0].Type != "input_text" || m.Content[0].Text != text {
				t.Errorf("the first item: %s", items[0].RawJSON())
			}
			pending := map[string]bool{}
			for _, it := range items {
				switch it.Type {
				case "function_call":
					pending[it.AsFunctionCall().CallID] = true
				case "function_call_output":
					delete(pending, it.AsFunctionCallOutput().CallID)
				}
			}
			if len(pending) > 0 {
				t.Errorf("calls without their output among the items: %v", pending)
			}
		})
	}
	// A stored response and a conversation read into the SDK's types.
	r := respond(map[string]any{"input": "Call mom about her birthday"})
	req, _ := http.NewRequest(http.MethodGet, base+"/responses/"+r.ID, nil)
	req.Header.Set("Authorization", "Bearer x")
	resp, err := sim.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var stored oai.Response
	if err := json.NewDecoder(resp.Body).Decode(&stored); err != nil || stored.ID != r.ID || len(calls(stored)) != 1 {
		t.Fatalf("stored response %v: %+v", err, stored)
	}
	resp.Body.Close()
}
