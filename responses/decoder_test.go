package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire"
	rt "github.com/brainwire/brainwire/responses/responsestest"
)

// decodeAll reads every event of body; err is the final error (nil at a
// clean end).
func decodeAll(t testing.TB, r io.Reader) ([]brainwire.AgentEvent, error) {
	t.Helper()
	d := NewDecoder(r)
	var evs []brainwire.AgentEvent
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if len(evs) > 100000 {
			t.Fatal("too many events")
		}
	}
}

// summary writes events one per line, for comparisons that read well.
func summary(evs []brainwire.AgentEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s", ev.Kind)
		switch ev.Kind {
		case brainwire.AgentTextChunk:
			fmt.Fprintf(&b, " %q", ev.Text)
		case brainwire.AgentToolCall:
			fmt.Fprintf(&b, " %s %s %s thread=%s run=%s", ev.Tool.ID, ev.Tool.Name, ev.Tool.Arguments, ev.Tool.ThreadID, ev.Tool.RunID)
		case brainwire.AgentUsage:
			fmt.Fprintf(&b, " %+v", ev.Usage)
		case brainwire.AgentRunStatus:
			fmt.Fprintf(&b, " %s", ev.Status)
			if ev.ErrorCode != "" || ev.ErrorMessage != "" {
				fmt.Fprintf(&b, " (%s: %s)", ev.ErrorCode, ev.ErrorMessage)
			}
		case brainwire.AgentError:
			fmt.Fprintf(&b, " (%s: %s)", ev.ErrorCode, ev.ErrorMessage)
		}
		fmt.Fprintf(&b, " [%s %s]\n", ev.ThreadID, ev.RunID)
	}
	return b.String()
}

func readVector(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecodeSpecExchange decodes the specification's tool round, read one
// byte at a time and with CRLF line ends, into the same events.
func TestDecodeSpecExchange(t *testing.T) {
	want := map[string]string{
		"spec-function-call.sse": `run_status in_progress [ resp_A]
run_status in_progress [ resp_A]
text_chunk "**Checking weather**\n\nI should call get_weather." [ resp_A]
text_chunk "Let me check" [ resp_A]
text_chunk " that." [ resp_A]
tool_call call_X get_weather {"city":"Paris"} thread= run=resp_A [ resp_A]
usage {PromptTokens:291 CompletionTokens:64 TotalTokens:355 ReasoningTokens:32} [ resp_A]
run_status requires_action [ resp_A]
`,
		"spec-continuation.sse": `run_status in_progress [ resp_B]
run_status in_progress [ resp_B]
text_chunk "It's 18 °C and clear in Paris." [ resp_B]
usage {PromptTokens:330 CompletionTokens:12 TotalTokens:342 ReasoningTokens:0} [ resp_B]
run_status completed [ resp_B]
`,
	}
	for name, w := range want {
		body := readVector(t, name)
		for _, variant := range []struct {
			name string
			body string
			r    func(string) io.Reader
		}{
			{"whole", body, func(s string) io.Reader { return strings.NewReader(s) }},
			{"one byte at a time", body, func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
			{"CRLF, one byte at a time", strings.ReplaceAll(body, "\n", "\r\n"), func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
			{"CR only", strings.ReplaceAll(body, "\n", "\r"), func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) }},
		} {
			t.Run(name+"/"+variant.name, func(t *testing.T) {
				evs, err := decodeAll(t, variant.r(variant.body))
				if err != nil {
					t.Fatal(err)
				}
				if got := summary(evs); got != w {
					t.Fatalf("events:\n%s\nwant:\n%s", got, w)
				}
			})
		}
	}
}

func wire(evs []rt.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Wire())
	}
	return b.String()
}

func TestDecoder(t *testing.T) {
	args := `{"text":"Lunch with 李明 🍜","bucket":"People","confidence":0.9,"status":"classified"}`
	conv := rt.InConversation("conv_1")
	cases := []struct {
		name string
		body string
		want string
		err  string // a substring of the final error; "" for a clean end
	}{
		{
			name: "reasoning, a function call, completed in a conversation",
			body: wire(rt.NewTurn("resp_1", conv).Reasoning("rs_1", "Lunch", " with 李明 🍜", "").
				FunctionCall("fc_1", "call_1", "file_capture", args).Complete(rt.Usage{Input: 100, Output: 20, Reasoning: 8}).Events()),
			want: `run_status in_progress [conv_1 resp_1]
run_status in_progress [conv_1 resp_1]
text_chunk "Lunch" [conv_1 resp_1]
text_chunk " with 李明 🍜" [conv_1 resp_1]
tool_call call_1 file_capture ` + args + ` thread=conv_1 run=resp_1 [conv_1 resp_1]
usage {PromptTokens:100 CompletionTokens:20 TotalTokens:120 ReasoningTokens:8} [conv_1 resp_1]
run_status requires_action [conv_1 resp_1]
`,
		},
		{
			name: "two function calls in one response",
			body: wire(rt.NewTurn("resp_1").FunctionCall("fc_1", "call_1", "file_capture", `{}`).
				FunctionCall("fc_2", "call_2", "file_capture", `{"a":1}`).Complete(rt.Usage{}).Events()),
			want: `run_status in_progress [ resp_1]
run_status in_progress [ resp_1]
tool_call call_1 file_capture {} thread= run=resp_1 [ resp_1]
tool_call call_2 file_capture {"a":1} thread= run=resp_1 [ resp_1]
usage {PromptTokens:0 CompletionTokens:0 TotalTokens:0 ReasoningTokens:0} [ resp_1]
run_status requires_action [ resp_1]
`,
		},
		{
			name: "a function call only in response.completed's output",
			body: `event: response.created
data: {"type":"response.created","response":{"id":"resp_1","status":"queued"}}

event: response.completed
data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_9","name":"file_capture","arguments":"{\"x\":1}"},{"type":"message","id":"m"}]}}

`,
			want: `run_status queued [ resp_1]
tool_call call_9 file_capture {"x":1} thread= run=resp_1 [ resp_1]
run_status requires_action [ resp_1]
`,
		},
		{
			name: "failed",
			body: wire(rt.NewTurn("resp_1").Reasoning("rs_1", "Hmm").Fail("server_error", "The model failed to generate a response.").Events()),
			want: `run_status in_progress [ resp_1]
run_status in_progress [ resp_1]
text_chunk "Hmm" [ resp_1]
run_status failed (server_error: The model failed to generate a response.) [ resp_1]
`,
		},
		{
			name: "incomplete",
			body: wire(rt.NewTurn("resp_1").Message("m", "Half").Incomplete("max_output_tokens", rt.Usage{Input: 5, Output: 7}).Events()),
			want: `run_status in_progress [ resp_1]
run_status in_progress [ resp_1]
text_chunk "Half" [ resp_1]
usage {PromptTokens:5 CompletionTokens:7 TotalTokens:12 ReasoningTokens:0} [ resp_1]
run_status incomplete (max_output_tokens: the response ended incomplete: max_output_tokens) [ resp_1]
`,
		},
		{
			name: "error event, then the stream ends",
			body: wire(rt.NewTurn("resp_1").Error("rate_limit_exceeded", "Slow down.").Events()),
			want: `run_status in_progress [ resp_1]
run_status in_progress [ resp_1]
error (rate_limit_exceeded: Slow down.) [ resp_1]
`,
		},
		{
			name: "an unnamed frame with a nested error, as a proxy sends it",
			body: "data: {\"error\":{\"code\":502,\"message\":\"Bad gateway\"}}\n\n",
			want: "error (502: Bad gateway) [ ]\n",
		},
		{
			name: "unnamed frames dispatch on data.type",
			body: "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n" +
				"data: {\"delta\":\"hi\",\"type\":\"response.output_text.delta\"}\n\n" +
				"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\"}}\n\n",
			want: "run_status in_progress [ r]\ntext_chunk \"hi\" [ r]\nrun_status completed [ r]\n",
		},
		{
			name: "[DONE], unknown events and comments are fine; what follows the terminal event is ignored",
			body: ": keep-alive\n\nevent: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n" +
				"event: response.compaction.compacting\ndata: {\"type\":\"response.compaction.compacting\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\"}}\n\n" +
				"event: response.output_text.delta\ndata: {\"delta\":\"late\"}\n\ndata: [DONE]\n\n",
			want: "run_status in_progress [ r]\nrun_status completed [ r]\n",
		},
		{
			name: "escapes and empty deltas",
			body: "event: response.reasoning_summary_text.delta\ndata: {\"delta\":\"a\\u00e9\\n\\ud83c\\udf5c\\\"\"}\n\n" +
				"event: response.output_text.delta\ndata: {\"delta\":\"\"}\n\n" +
				"event: response.refusal.delta\ndata: {\"delta\":null}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":null}\n\n",
			want: "text_chunk \"aé\\n🍜\\\"\" [ ]\nrun_status completed [ ]\n",
		},
		{
			name: "cut before a terminal event",
			body: wire(rt.NewTurn("resp_1").Reasoning("rs_1", "Hmm").Events()),
			want: "run_status in_progress [ resp_1]\nrun_status in_progress [ resp_1]\ntext_chunk \"Hmm\" [ resp_1]\n",
			err:  "ended before the response finished (it was in_progress): unexpected EOF",
		},
		{
			name: "an empty body",
			err:  "ended before the response finished (it was not yet created)",
		},
		{
			name: "a malformed delta",
			body: "event: response.output_text.delta\ndata: {\"delta\":\"x\"\n\n",
			err:  "decoding response.output_text.delta event: unexpected end of JSON input",
		},
		{
			name: "a delta that is not a string",
			body: "event: response.output_text.delta\ndata: {\"delta\":5}\n\n",
			err:  "decoding response.output_text.delta event",
		},
		{
			name: "an error event with a gateway's page",
			body: "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n" +
				"event: error\ndata: <html><body>502 Bad Gateway: 10.0.0.7</body></html>\n\n",
			want: "run_status in_progress [ r]\n",
			err:  "error event: <html><body>502 Bad Gateway: 10.0.0.7</body></html>",
		},
		{
			name: "an error event whose JSON says nothing",
			body: "event: error\ndata: {\"type\":\"error\",\"upstream\":\"10.0.0.7\"}\n\n",
			err:  `error event: {"type":"error","upstream":"10.0.0.7"}`,
		},
		{
			name: "a malformed response object",
			body: "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":7}}\n\n",
			err:  "decoding response.completed event",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var r io.Reader = strings.NewReader(c.body)
				if split {
					r = iotest.OneByteReader(r)
				}
				evs, err := decodeAll(t, r)
				if got := summary(evs); got != c.want {
					t.Errorf("split=%v events:\n%s\nwant:\n%s", split, got, c.want)
				}
				switch {
				case c.err == "" && err != nil:
					t.Errorf("split=%v: %v", split, err)
				case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
					t.Errorf("split=%v: error %v, want %q", split, err, c.err)
				}
			}
		})
	}
}

// TestReadErrorAfterTerminal: once the response is over, a connection
// that breaks loses nothing.
func TestReadErrorAfterTerminal(t *testing.T) {
	body := wire(rt.NewTurn("resp_1").Complete(rt.Usage{}).Events())
	r := io.MultiReader(strings.NewReader(body), iotest.ErrReader(errors.New("connection reset by peer")))
	evs, err := decodeAll(t, r)
	if err != nil || len(evs) != 4 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	r = io.MultiReader(strings.NewReader(body[:len(body)/2]), iotest.ErrReader(errors.New("connection reset by peer")))
	if _, err := decodeAll(t, r); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("error %v, want the reset", err)
	}
}

func TestDecoderSeedsConversation(t *testing.T) {
	d := NewDecoder(strings.NewReader(wire(rt.NewTurn("resp_1").Complete(rt.Usage{}).Events())))
	d.SetConversation("conv_7")
	ev, err := d.Next()
	if err != nil || ev.ThreadID != "conv_7" || ev.RunID != "resp_1" {
		t.Fatalf("%+v %v", ev, err)
	}
}

var deltaSeeds = []string{
	`{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_A","output_index":1,"content_index":0,"delta":"Let me check","logprobs":[],"obfuscation":"q3Zt"}`,
	`{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_A","output_index":0,"summary_index":0,"delta":"**Checking weather**\n\nI should call get_weather."}`,
	`{"delta":"a\u00e9\ud83c\udf5c\ud800x\"","type":"response.refusal.delta"}`,
	`{"delta":"x","delta":null}`, `{"delta":5,"delta":"ok"}`, `{"\u0064elta":"escaped key"}`,
	`null`, ` {} `, `[]`, `"s"`, `{"delta":"x"} x`, `{"error":{"code":"c"}}`, `{"error":null,"type":null}`,
	`{"a":[1,-2.5e+3,true,false,null,{"b":{}}],"delta":"\t"}`, "{\"delta\":\"\xff\xfe\"}", `{"delta":"\u0000"}`,
	`{"delta":"` + strings.Repeat("[", 3) + `"}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
}

// FuzzDecoder feeds one frame (an event name and its data) to the decoder
// as the service would send it, whole and one byte at a time: both must
// yield the same events and end the same way, with a sticky error that
// says something.
func FuzzDecoder(f *testing.F) {
	for _, s := range deltaSeeds {
		f.Add(TypeOutputTextDelta, []byte(s))
		f.Add("", []byte(s))
	}
	for _, s := range []string{
		`{"response":{"id":"r","status":"completed","output":[null,{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"message"}],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3,"output_tokens_details":{"reasoning_tokens":1}}}}`,
		`{"response":{"id":5,"id":"r","output":null,"output":[{"type":"function_call","type":"x"}]}}`,
		`{"response":{"output":[5]}}`, `{"response":{"output":[{"type":7}]}}`, `{"response":null}`, `{"response":[]}`, `null`,
		`{"response":{"ID":"upper","Status":"x","conversation":{"id":"conv_1"},"error":{"code":500,"message":"m"},"incomplete_details":{"reason":null}}}`,
		`{"response":{"\u0069d":"escaped","output":[{"\u0074ype":"function_call","call_id":"c"}]}}`,
		`{"response":{"usage":{"input_tokens":1.5}}}`, `{"response":{"output":{}}}`,
		`{"item":{"type":"function_call","call_id":"c","name":"f","arguments":{"a":1}}}`, `{"item":null}`, `{"item":5}`,
	} {
		for _, name := range []string{TypeCompleted, TypeFailed, TypeIncomplete, TypeCreated, TypeOutputItemDone, ""} {
			f.Add(name, []byte(s))
		}
	}
	for _, name := range []string{"spec-function-call.sse", "spec-continuation.sse"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		var event string
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				f.Add(event, []byte(data))
			}
		}
	}
	for _, data := range fixtureStreams(f) {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(data), &typ)
		f.Add(typ.Type, []byte(data))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(string(data), "\r\n") {
			return // one line each, as a frame carries them
		}
		frame := "data: " + string(data) + "\n\n"
		if name != "" {
			frame = "event: " + name + "\n" + frame
		}
		whole := NewDecoder(strings.NewReader(frame))
		bytewise := NewDecoder(iotest.OneByteReader(strings.NewReader(frame)))
		for i := 0; ; i++ {
			a, errA := whole.Next()
			b, errB := bytewise.Next()
			if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
				t.Fatalf("frame %q, event %d: whole %+v, %v; one byte at a time %+v, %v", frame, i, a, errA, b, errB)
			}
			if errA != nil {
				if errA.Error() != errB.Error() || errA.Error() == "" {
					t.Fatalf("frame %q: errors %q and %q", frame, errA, errB)
				}
				if _, again := whole.Next(); again != errA {
					t.Fatalf("frame %q: error not sticky: %v, then %v", frame, errA, again)
				}
				return
			}
		}
	})
}
