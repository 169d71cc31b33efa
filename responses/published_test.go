package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/recordings"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
)

// The published recordings (internal/recordings) are streams that OpenAI
// and Azure OpenAI sent, not this repository's simulator: these tests
// serve each through responsestest, read it with the client and decoder,
// and hold what the decoder makes of it to what the stream itself says,
// read independently here with encoding/json.

// publishedEventTypes is every event type the recorded streams carry and
// what the decoder does with it: read, or skipped because what it says
// arrives again, whole, in an event the decoder reads. A type not listed
// fails the test, so that a new one is decided on, not ignored by chance.
var publishedEventTypes = map[string]string{
	responses.TypeCreated:                "read: the response id, in_progress",
	responses.TypeInProgress:             "read: in_progress",
	responses.TypeCompleted:              "read: usage, the calls the response asked for, the final status",
	responses.TypeOutputTextDelta:        "read: a text chunk",
	responses.TypeReasoningSummaryDelta:  "read: a text chunk",
	responses.TypeOutputItemDone:         "read: a function call, whole",
	responses.TypeOutputItemAdded:        "skipped: the item is repeated by response.output_item.done",
	responses.TypeContentPartAdded:       "skipped: an empty part",
	responses.TypeContentPartDone:        "skipped: the part's text, already read from its deltas",
	responses.TypeOutputTextDone:         "skipped: the text, already read from its deltas",
	responses.TypeReasoningSummaryAdded:  "skipped: an empty summary part",
	responses.TypeReasoningSummaryDone:   "skipped: the summary part, already read from its deltas",
	responses.TypeReasoningSummaryText:   "skipped: the summary text, already read from its deltas",
	responses.TypeFunctionArgumentsDelta: "skipped: the arguments arrive whole in response.output_item.done",
	responses.TypeFunctionArgumentsDone:  "skipped: the arguments arrive whole in response.output_item.done",
}

// recordedEvent is one event of a recorded stream.
type recordedEvent struct {
	Name string
	Data string
	v    map[string]json.RawMessage
}

func (e recordedEvent) str(key string) string {
	var s string
	_ = json.Unmarshal(e.v[key], &s)
	return s
}

func (e recordedEvent) num(key string) int {
	n := -1
	_ = json.Unmarshal(e.v[key], &n)
	return n
}

// splitStream reads a recorded body as the service framed it: events
// apart by a blank line, an event: line and one data: line each.
func splitStream(t *testing.T, body string) []recordedEvent {
	t.Helper()
	if strings.Contains(body, "\r") {
		t.Fatal("the recorded stream has CR line ends; this reader expects LF")
	}
	var out []recordedEvent
	for block := range strings.SplitSeq(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var ev recordedEvent
		for line := range strings.SplitSeq(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && ev.Data == "":
				ev.Data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected line in a recorded event: %q", line)
			}
		}
		if err := json.Unmarshal([]byte(ev.Data), &ev.v); err != nil {
			t.Fatalf("event %s: %v", ev.Name, err)
		}
		if typ := ev.str("type"); typ != ev.Name {
			t.Fatalf("event: %s carries type %q", ev.Name, typ)
		}
		out = append(out, ev)
	}
	return out
}

// expected is what a recorded stream says, read independently of the
// decoder.
type expected struct {
	responseID string
	chunks     []string // non-empty text deltas, in order
	calls      []brainwire.ToolCall
	usage      brainwire.Usage
	status     brainwire.RunStatus
	summaries  int // reasoning summary parts reassembled
}

// expect reads a recorded stream: it checks the stream is whole by its own
// rules (consecutive sequence numbers, deltas that add up to each done
// text and to the final response's output) and returns what a reader
// must make of it.
func expect(t *testing.T, evs []recordedEvent) expected {
	t.Helper()
	var x expected
	type part struct {
		item string
		idx  int
	}
	texts := map[part]*strings.Builder{}
	args := map[string]*strings.Builder{} // item id -> arguments
	names := map[string][2]string{}       // item id -> call id, name
	var order []string                    // function call items, as added
	var completed struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Usage  struct {
			InputTokens         int64 `json:"input_tokens"`
			OutputTokens        int64 `json:"output_tokens"`
			TotalTokens         int64 `json:"total_tokens"`
			OutputTokensDetails struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
		Output []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Summary   []struct {
				Text string `json:"text"`
			} `json:"summary"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	for i, ev := range evs {
		if _, ok := publishedEventTypes[ev.Name]; !ok {
			t.Errorf("event type %s: the decoder's handling of it is not decided (publishedEventTypes)", ev.Name)
		}
		if n := ev.num("sequence_number"); n != i {
			t.Errorf("event %d (%s) has sequence_number %d", i, ev.Name, n)
		}
		switch ev.Name {
		case responses.TypeOutputTextDelta, responses.TypeReasoningSummaryDelta:
			idxKey := "content_index"
			if ev.Name == responses.TypeReasoningSummaryDelta {
				idxKey = "summary_index"
			}
			p := part{ev.str("item_id"), ev.num(idxKey)}
			if texts[p] == nil {
				texts[p] = &strings.Builder{}
			}
			d := ev.str("delta")
			texts[p].WriteString(d)
			if d != "" {
				x.chunks = append(x.chunks, d)
			}
		case responses.TypeOutputTextDone, responses.TypeReasoningSummaryText:
			idxKey := "content_index"
			if ev.Name == responses.TypeReasoningSummaryText {
				idxKey = "summary_index"
				x.summaries++
			}
			p := part{ev.str("item_id"), ev.num(idxKey)}
			got := ""
			if texts[p] != nil {
				got = texts[p].String()
			}
			if want := ev.str("text"); got != want {
				t.Errorf("%s %v: the deltas add up to %q, the done event says %q", ev.Name, p, got, want)
			}
		case responses.TypeOutputItemAdded:
			var it struct {
				Type   string `json:"type"`
				ID     string `json:"id"`
				CallID string `json:"call_id"`
				Name   string `json:"name"`
			}
			if err := json.Unmarshal(ev.v["item"], &it); err != nil {
				t.Fatal(err)
			}
			if it.Type == "function_call" {
				names[it.ID] = [2]string{it.CallID, it.Name}
				args[it.ID] = &strings.Builder{}
				order = append(order, it.ID)
			}
		case responses.TypeFunctionArgumentsDelta:
			b := args[ev.str("item_id")]
			if b == nil {
				t.Fatalf("arguments delta for an item never added: %s", ev.Data)
			}
			b.WriteString(ev.str("delta"))
		case responses.TypeFunctionArgumentsDone:
			if got, want := args[ev.str("item_id")].String(), ev.str("arguments"); got != want {
				t.Errorf("arguments deltas add up to %q, the done event says %q", got, want)
			}
		case responses.TypeCompleted:
			if i != len(evs)-1 {
				t.Errorf("response.completed is event %d of %d", i, len(evs))
			}
			if err := json.Unmarshal(ev.v["response"], &completed); err != nil {
				t.Fatal(err)
			}
		case responses.TypeCreated:
			var r struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(ev.v["response"], &r)
			x.responseID = r.ID
		}
	}
	if completed.Status != "completed" || completed.ID != x.responseID {
		t.Fatalf("the stream ends with response %q %q, want %q completed", completed.ID, completed.Status, x.responseID)
	}
	for _, id := range order {
		x.calls = append(x.calls, brainwire.ToolCall{ID: names[id][0], Name: names[id][1], Arguments: json.RawMessage(args[id].String())})
	}
	// The final response repeats every call and text whole.
	var finalCalls []brainwire.ToolCall
	for _, it := range completed.Output {
		switch it.Type {
		case "function_call":
			finalCalls = append(finalCalls, brainwire.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(it.Arguments)})
		case "reasoning":
			for i, s := range it.Summary {
				if b := texts[part{it.ID, i}]; b == nil || b.String() != s.Text {
					t.Errorf("reasoning %s summary %d: the final response says %q", it.ID, i, s.Text)
				}
			}
		case "message":
			for i, c := range it.Content {
				if b := texts[part{it.ID, i}]; c.Type == "output_text" && (b == nil || b.String() != c.Text) {
					t.Errorf("message %s content %d: the final response says %q", it.ID, i, c.Text)
				}
			}
		}
	}
	if !reflect.DeepEqual(finalCalls, x.calls) {
		t.Errorf("calls streamed %v, the final response has %v", x.calls, finalCalls)
	}
	u := completed.Usage
	x.usage = brainwire.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens,
		ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
	x.status = brainwire.RunCompleted
	if len(x.calls) > 0 {
		x.status = brainwire.RunRequiresAction
	}
	return x
}

// decodeServed creates a response against a responsestest server
// answering with resp, and returns every event the client's stream gave.
func decodeServed(t *testing.T, resp rt.Response) []brainwire.AgentEvent {
	t.Helper()
	srv := rt.NewServer(t, rt.Expect("POST /responses", resp))
	c, err := responses.NewClient(srv.BaseURL(), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateResponse(context.Background(), responses.CreateResponseRequest{Model: "gpt-5-mini", Input: []responses.InputItem{responses.UserMessage("What's the weather in Florence, Italy?")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []brainwire.AgentEvent
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(evs), err)
		}
		evs = append(evs, ev)
	}
}

// checkDecoded holds the decoder's events to what the stream says.
func checkDecoded(t *testing.T, evs []brainwire.AgentEvent, x expected) {
	t.Helper()
	var chunks []string
	var calls []brainwire.ToolCall
	var usage []brainwire.Usage
	var statuses []brainwire.RunStatus
	for _, ev := range evs {
		if ev.RunID != x.responseID {
			t.Errorf("%s event names response %q, want %q", ev.Kind, ev.RunID, x.responseID)
		}
		switch ev.Kind {
		case brainwire.AgentTextChunk:
			chunks = append(chunks, ev.Text)
		case brainwire.AgentToolCall:
			calls = append(calls, brainwire.ToolCall{ID: ev.Tool.ID, Name: ev.Tool.Name, Arguments: ev.Tool.Arguments})
			if ev.Tool.RunID != x.responseID {
				t.Errorf("call %s names response %q", ev.Tool.ID, ev.Tool.RunID)
			}
		case brainwire.AgentUsage:
			usage = append(usage, ev.Usage)
		case brainwire.AgentRunStatus:
			statuses = append(statuses, ev.Status)
		default:
			t.Errorf("unexpected %s event: %+v", ev.Kind, ev)
		}
	}
	if !reflect.DeepEqual(chunks, x.chunks) {
		t.Errorf("text chunks:\n%q\nwant:\n%q", chunks, x.chunks)
	}
	if !reflect.DeepEqual(calls, x.calls) {
		t.Errorf("tool calls %s, want %s", showCalls(calls), showCalls(x.calls))
	}
	if !reflect.DeepEqual(usage, []brainwire.Usage{x.usage}) {
		t.Errorf("usage %+v, want %+v", usage, x.usage)
	}
	want := []brainwire.RunStatus{brainwire.RunInProgress, brainwire.RunInProgress, x.status}
	if !reflect.DeepEqual(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	if n := len(evs); n < 2 || evs[n-2].Kind != brainwire.AgentUsage || evs[n-1].Kind != brainwire.AgentRunStatus {
		t.Errorf("the stream does not end with usage, then the final status")
	}
}

func showCalls(calls []brainwire.ToolCall) string {
	var out []string
	for _, c := range calls {
		out = append(out, fmt.Sprintf("%s %s(%s)", c.ID, c.Name, c.Arguments))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// TestPublishedStreams decodes every published stream, served as recorded
// and again reframed with CRLF line ends in 7-byte writes (split inside
// lines, CRLF pairs and multibyte characters).
func TestPublishedStreams(t *testing.T) {
	hosts := map[string]int{}
	var calls, summaries int
	for _, rel := range recordings.ResponsesStreams(t) {
		for i, ex := range recordings.ReadCassette(t, rel) {
			t.Run(recordings.Label(rel, i), func(t *testing.T) {
				hosts[ex.Host()]++
				evs := splitStream(t, ex.Body)
				x := expect(t, evs)
				calls += len(x.calls)
				summaries += x.summaries
				t.Run("as recorded", func(t *testing.T) {
					checkDecoded(t, decodeServed(t, rt.Raw(http.StatusOK, ex.ContentType, ex.Body)), x)
				})
				t.Run("CRLF, 7-byte writes", func(t *testing.T) {
					framed := make([]rt.Event, len(evs))
					for i, ev := range evs {
						framed[i] = rt.Event{Name: ev.Name, Data: ev.Data}
					}
					checkDecoded(t, decodeServed(t, rt.Stream(framed...).CRLF().Chunked(7)), x)
				})
			})
		}
	}
	// The recordings must keep covering what they are here for.
	var azure, openai int
	for h, n := range hosts {
		switch {
		case strings.HasSuffix(h, ".openai.azure.com"):
			azure += n
		case h == "api.openai.com":
			openai += n
		default:
			t.Errorf("a recording from %s", h)
		}
	}
	if azure == 0 || openai == 0 || calls == 0 || summaries == 0 {
		t.Errorf("streams from Azure OpenAI: %d, from OpenAI: %d, function calls: %d, reasoning summary parts: %d; want some of each",
			azure, openai, calls, summaries)
	}
	t.Logf("%d streams from Azure OpenAI, %d from OpenAI; %d function calls, %d reasoning summary parts", azure, openai, calls, summaries)
}

// TestPublishedToolRounds runs the provider through each published tool
// round: the first recorded response asks for function calls, the
// provider runs them and answers with their outputs, chained by
// previous_response_id as on Azure OpenAI, and the second recorded
// response completes. The calls answered are those the recording's own
// client answered.
func TestPublishedToolRounds(t *testing.T) {
	rounds := 0
	for _, rel := range recordings.ResponsesStreams(t) {
		exs := recordings.ReadCassette(t, rel)
		if len(exs) != 2 {
			continue
		}
		first := expect(t, splitStream(t, exs[0].Body))
		if len(first.calls) == 0 {
			continue
		}
		rounds++
		t.Run(rel, func(t *testing.T) {
			second := expect(t, splitStream(t, exs[1].Body))
			srv := rt.NewServer(t,
				rt.Expect("POST /responses", rt.Raw(http.StatusOK, exs[0].ContentType, exs[0].Body)),
				rt.Expect("POST /responses", rt.Raw(http.StatusOK, exs[1].ContentType, exs[1].Body)))
			var recorded struct {
				Model string `json:"model"`
				Input []struct {
					Type   string `json:"type"`
					CallID string `json:"call_id"`
				} `json:"input"`
			}
			if err := json.Unmarshal([]byte(exs[1].RequestBody), &recorded); err != nil {
				t.Fatal(err)
			}
			var answered []string // the call ids the recording's client answered
			for _, in := range recorded.Input {
				if in.Type == "function_call_output" {
					answered = append(answered, in.CallID)
				}
			}
			var defs []brainwire.ToolDefinition
			for _, c := range first.calls {
				defs = append(defs, brainwire.ToolDefinition{Name: c.Name, Parameters: json.RawMessage(`{"type":"object"}`)})
			}
			ts := tools{defs: defs, call: func(_ context.Context, c brainwire.ToolCall) brainwire.ToolResult {
				return brainwire.ToolResult{CallID: c.ID, Name: c.Name, Output: fmt.Sprintf(`{"called":%q,"with":%s}`, c.Name, c.Arguments)}
			}}
			p, _ := newProvider(t, srv, responses.Agent{Model: recorded.Model}, responses.WithChaining(responses.ChainPreviousResponse))
			evs, err := collect(t, runAgent(context.Background(), p, brainwire.RunRequest{Message: "the recorded question"}, ts))
			if err != nil {
				t.Fatal(err)
			}
			var results []string
			for _, ev := range evs {
				if ev.Kind == brainwire.AgentToolResult {
					results = append(results, ev.Tool.ID)
				}
			}
			if last := evs[len(evs)-1]; last.Kind != brainwire.AgentRunStatus || last.Status != second.status || last.RunID != second.responseID {
				t.Errorf("the run ends with %s %s of %s, want %s of %s", last.Kind, last.Status, last.RunID, second.status, second.responseID)
			}
			reqs := srv.Find("POST /responses")
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			body := reqs[1].Body
			if prev := body["previous_response_id"]; prev != first.responseID {
				t.Errorf("the second request continues %v, want %s", prev, first.responseID)
			}
			var outputs []string
			input, _ := body["input"].([]any)
			for i, in := range input {
				item, _ := in.(map[string]any)
				if item["type"] != "function_call_output" {
					t.Errorf("input %d is %v, want a function_call_output", i, item["type"])
					continue
				}
				id, _ := item["call_id"].(string)
				outputs = append(outputs, id)
				var c brainwire.ToolCall
				for _, fc := range first.calls {
					if fc.ID == id {
						c = fc
					}
				}
				if want := fmt.Sprintf(`{"called":%q,"with":%s}`, c.Name, c.Arguments); item["output"] != want {
					t.Errorf("output for %s is %v, want %s", id, item["output"], want)
				}
			}
			if !reflect.DeepEqual(outputs, answered) || !reflect.DeepEqual(results, answered) {
				t.Errorf("answered calls %v (results %v), the recording's client answered %v", outputs, results, answered)
			}
		})
	}
	if rounds == 0 {
		t.Fatal("no published tool round")
	}
}
