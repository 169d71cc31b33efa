package responseswire

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The recorded OpenAI and Azure OpenAI streams pad every delta to a
// multiple of 16 characters.
func TestObfuscationPadsToSixteen(t *testing.T) {
	for delta, want := range map[string]int{"a": 15, "Olá": 13, "—": 15, "0123456789abcdef": 0, strings.Repeat("x", 33): 15} {
		if got := len(Obfuscation(delta)); got != want {
			t.Errorf("Obfuscation(%q) has %d characters, want %d", delta, got, want)
		}
	}
}

func TestFragmentsKeepRunesWhole(t *testing.T) {
	args := `{"text":"Café ☕ with Zoë","bucket":"People"}`
	frags := Fragments(args)
	if strings.Join(frags, "") != args || len(frags) < 5 {
		t.Fatalf("fragments %q", frags)
	}
	for _, f := range frags {
		if !utf8.ValidString(f) {
			t.Errorf("fragment %q splits a rune", f)
		}
	}
}

func TestStreamEvents(t *testing.T) {
	var s Stream
	s.Lifecycle("created", &Response{ID: "resp_1"})
	s.Reasoning(0, "rs_1", nil)
	s.Message(1, "msg_1", []string{"Hi"})
	s.FunctionCall(2, "fc_1", "call_1", "file_capture", `{}`)
	s.Error("server_error", "boom")
	var types []string
	paced := 0
	for i, f := range s.Frames() {
		types = append(types, f.Type)
		if !strings.Contains(string(f.Data), `"sequence_number":`+strconv.Itoa(i)+`,`) {
			t.Errorf("event %d: %s", i, f.Data)
		}
		if f.Paced {
			paced++
		}
		if f.Type == "response.function_call_arguments.done" && string(f.Data) != `{"type":"response.function_call_arguments.done","sequence_number":11,"item_id":"fc_1","output_index":2,"arguments":"{}"}` {
			t.Errorf("arguments done: %s", f.Data)
		}
		if f.Type == "response.output_item.done" && strings.Contains(string(f.Data), `"rs_1"`) && string(f.Data) != `{"type":"response.output_item.done","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}` {
			t.Errorf("reasoning done: %s", f.Data)
		}
	}
	want := "response.created response.output_item.added response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done error"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if paced != 1 {
		t.Errorf("%d paced events, want the one text delta", paced)
	}
}
