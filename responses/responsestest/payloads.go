package responsestest

import (
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire/internal/scripttest"
)

// Usage is a response's token count, as response.completed reports it.
type Usage struct {
	Input, Output, Reasoning int64
}

// Turn builds the stream of one response the way the API streams it: the
// event types, their fields and order, and consecutive sequence numbers
// from 0, as in the specification's examples. Output items are numbered in
// the order they are added; the final response object lists them all.
type Turn struct {
	id                 string
	conversation       string
	previousResponseID string
	model              string
	instructions       string
	agent              string

	seq     int
	output  []Object // completed output items
	events  []Event
	created int64
}

// NewTurn starts the stream of response id with response.created and
// response.in_progress.
func NewTurn(id string, opts ...TurnOption) *Turn {
	t := &Turn{id: id, model: "gpt-5-mini", created: 1741290958}
	for _, o := range opts {
		o(t)
	}
	t.emit("response.created", Object{{"response", t.response("in_progress", nil)}})
	t.emit("response.in_progress", Object{{"response", t.response("in_progress", nil)}})
	return t
}

// TurnOption configures a Turn.
type TurnOption func(*Turn)

// InConversation marks the response as part of conversation id.
func InConversation(id string) TurnOption { return func(t *Turn) { t.conversation = id } }

// After marks the response as continuing previous.
func After(previous string) TurnOption { return func(t *Turn) { t.previousResponseID = previous } }

// ForAgent marks the response as a Foundry agent's.
func ForAgent(name string) TurnOption { return func(t *Turn) { t.agent = name } }

// Events returns the stream's events.
func (t *Turn) Events() []Event { return append([]Event(nil), t.events...) }

func (t *Turn) emit(typ string, fields Object) {
	data := append(Object{{"type", typ}, {"sequence_number", t.seq}}, fields...)
	t.seq++
	t.events = append(t.events, Event{Name: typ, Data: Encode(data)})
}

// Reasoning streams a reasoning item whose summary arrives in deltas.
func (t *Turn) Reasoning(itemID string, deltas ...string) *Turn {
	idx := len(t.output)
	text := strings.Join(deltas, "")
	t.emit("response.output_item.added", Object{{"output_index", idx}, {"item", Object{{"id", itemID}, {"type", "reasoning"}, {"summary", []any{}}}}})
	t.emit("response.reasoning_summary_part.added", Object{{"item_id", itemID}, {"output_index", idx}, {"summary_index", 0},
		{"part", Object{{"type", "summary_text"}, {"text", ""}}}})
	for _, d := range deltas {
		t.emit("response.reasoning_summary_text.delta", Object{{"item_id", itemID}, {"output_index", idx}, {"summary_index", 0},
			{"delta", d}, {"obfuscation", obfuscation(d)}})
	}
	t.emit("response.reasoning_summary_text.done", Object{{"item_id", itemID}, {"output_index", idx}, {"summary_index", 0}, {"text", text}})
	part := Object{{"type", "summary_text"}, {"text", text}}
	t.emit("response.reasoning_summary_part.done", Object{{"item_id", itemID}, {"output_index", idx}, {"summary_index", 0}, {"part", part}})
	item := Object{{"id", itemID}, {"type", "reasoning"}, {"summary", []any{part}}, {"encrypted_content", nil}}
	t.emit("response.output_item.done", Object{{"output_index", idx}, {"item", item}})
	t.output = append(t.output, item)
	return t
}

// Message streams an assistant message whose text arrives in deltas.
func (t *Turn) Message(itemID string, deltas ...string) *Turn {
	idx := len(t.output)
	text := strings.Join(deltas, "")
	t.emit("response.output_item.added", Object{{"output_index", idx}, {"item", Object{{"id", itemID}, {"type", "message"},
		{"status", "in_progress"}, {"content", []any{}}, {"role", "assistant"}}}})
	t.emit("response.content_part.added", Object{{"item_id", itemID}, {"output_index", idx}, {"content_index", 0},
		{"part", Object{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", ""}}}})
	for _, d := range deltas {
		t.emit("response.output_text.delta", Object{{"item_id", itemID}, {"output_index", idx}, {"content_index", 0},
			{"delta", d}, {"logprobs", []any{}}, {"obfuscation", obfuscation(d)}})
	}
	t.emit("response.output_text.done", Object{{"item_id", itemID}, {"output_index", idx}, {"content_index", 0}, {"text", text}, {"logprobs", []any{}}})
	part := Object{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}
	t.emit("response.content_part.done", Object{{"item_id", itemID}, {"output_index", idx}, {"content_index", 0}, {"part", part}})
	item := Object{{"id", itemID}, {"type", "message"}, {"status", "completed"}, {"content", []any{part}}, {"role", "assistant"}}
	t.emit("response.output_item.done", Object{{"output_index", idx}, {"item", item}})
	t.output = append(t.output, item)
	return t
}

// FunctionCall streams a function call whose arguments arrive in
// fragments of a few characters.
func (t *Turn) FunctionCall(itemID, callID, name, arguments string) *Turn {
	idx := len(t.output)
	t.emit("response.output_item.added", Object{{"output_index", idx}, {"item", Object{{"id", itemID}, {"type", "function_call"},
		{"status", "in_progress"}, {"arguments", ""}, {"call_id", callID}, {"name", name}}}})
	for _, frag := range fragments(arguments, 9) {
		t.emit("response.function_call_arguments.delta", Object{{"item_id", itemID}, {"output_index", idx}, {"delta", frag}, {"obfuscation", obfuscation(frag)}})
	}
	t.emit("response.function_call_arguments.done", Object{{"item_id", itemID}, {"name", name}, {"output_index", idx}, {"arguments", arguments}})
	item := Object{{"id", itemID}, {"type", "function_call"}, {"status", "completed"}, {"arguments", arguments}, {"call_id", callID}, {"name", name}}
	t.emit("response.output_item.done", Object{{"output_index", idx}, {"item", item}})
	t.output = append(t.output, item)
	return t
}

// Complete ends the response with response.completed and its usage.
func (t *Turn) Complete(u Usage) *Turn {
	r := t.response("completed", usage(u))
	t.emit("response.completed", Object{{"response", r}})
	return t
}

// Fail ends the response with response.failed and its error.
func (t *Turn) Fail(code, message string) *Turn {
	r := t.response("failed", nil)
	r.set("error", Object{{"code", code}, {"message", message}})
	t.emit("response.failed", Object{{"response", r}})
	return t
}

// Incomplete ends the response with response.incomplete and its reason.
func (t *Turn) Incomplete(reason string, u Usage) *Turn {
	r := t.response("incomplete", usage(u))
	r.set("incomplete_details", Object{{"reason", reason}})
	t.emit("response.incomplete", Object{{"response", r}})
	return t
}

// Error ends the stream with an error event.
func (t *Turn) Error(code, message string) *Turn {
	t.emit("error", Object{{"code", code}, {"message", message}, {"param", nil}})
	return t
}

// response is the response object as the lifecycle events carry it.
func (t *Turn) response(status string, u any) Object {
	var conv, prev, agent any
	if t.conversation != "" {
		conv = Object{{"id", t.conversation}}
	}
	if t.previousResponseID != "" {
		prev = t.previousResponseID
	}
	if t.agent != "" {
		agent = Object{{"type", "agent_reference"}, {"name", t.agent}, {"version", "1"}}
	}
	output := make([]any, len(t.output))
	for i, o := range t.output {
		output[i] = o
	}
	if status == "in_progress" {
		output = []any{}
	}
	return Object{
		{"id", t.id}, {"object", "response"}, {"created_at", t.created}, {"status", status},
		{"background", false}, {"error", nil}, {"incomplete_details", nil},
		{"instructions", orNil(t.instructions)}, {"max_output_tokens", nil}, {"model", t.model},
		{"output", output}, {"parallel_tool_calls", true}, {"previous_response_id", prev},
		{"reasoning", Object{{"effort", "low"}, {"summary", "auto"}}}, {"store", true},
		{"temperature", 1.0}, {"text", Object{{"format", Object{{"type", "text"}}}}},
		{"tool_choice", "auto"}, {"tools", []any{}}, {"top_p", 1.0}, {"truncation", "disabled"},
		{"usage", u}, {"user", nil}, {"metadata", Object{}}, {"conversation", conv}, {"agent_reference", agent},
	}
}

func usage(u Usage) any {
	return Object{
		{"input_tokens", u.Input}, {"input_tokens_details", Object{{"cached_tokens", 0}}},
		{"output_tokens", u.Output}, {"output_tokens_details", Object{{"reasoning_tokens", u.Reasoning}}},
		{"total_tokens", u.Input + u.Output},
	}
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// obfuscation pads a delta as the service does by default (random
// characters that hide the length of short deltas); here deterministic.
func obfuscation(delta string) string {
	const pad = "q3ZtA1xK9bLm"
	return pad[:max(1, 12-min(11, len(delta)))]
}

// fragments cuts s into pieces of about n bytes, never inside a UTF-8
// sequence.
func fragments(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// Object is a JSON object that keeps its fields in order, so payloads read
// like the service's.
type Object []Field

// Field is one member of an Object.
type Field struct {
	Key   string
	Value any
}

func (o *Object) set(key string, v any) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, Field{key, v})
}

// MarshalJSON implements json.Marshaler, without HTML escaping.
func (o Object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, scripttest.Encode(f.Key)...), ':')
		b = append(b, scripttest.Encode(f.Value)...)
	}
	return append(b, '}'), nil
}

// Encode returns v as one line of JSON, without HTML escaping.
func Encode(v any) string { return scripttest.Encode(v) }
