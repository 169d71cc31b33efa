package responsestest

import (
	"encoding/json"

	"github.com/brainwire/brainwire/internal/jsonw"
	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/responses/responseswire"
)

// Usage is a response's token count, as response.completed reports it.
type Usage struct {
	Input, Output, Reasoning int64
}

// Turn builds the stream of one response the way the API streams it,
// through responseswire: the event types, their fields and order, and
// consecutive sequence numbers from 0. Output items are numbered in the
// order they are added; the final response object lists them all.
type Turn struct {
	id                 string
	conversation       string
	previousResponseID string
	model              string
	instructions       string
	agent              string

	stream  responseswire.Stream
	output  []json.RawMessage // completed output items
	created int64
}

// NewTurn starts the stream of response id with response.created and
// response.in_progress.
func NewTurn(id string, opts ...TurnOption) *Turn {
	t := &Turn{id: id, model: "gpt-5-mini", created: 1741290958}
	for _, o := range opts {
		o(t)
	}
	t.stream.Lifecycle("created", t.response("in_progress", nil))
	t.stream.Lifecycle("in_progress", t.response("in_progress", nil))
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
func (t *Turn) Events() []Event {
	frames := t.stream.Frames()
	evs := make([]Event, len(frames))
	for i, f := range frames {
		evs[i] = Event{Name: f.Type, Data: string(f.Data)}
	}
	return evs
}

func (t *Turn) addItem(item any) {
	b, err := jsonw.Marshal(item)
	if err != nil {
		panic(err) // output items hold strings only
	}
	t.output = append(t.output, b)
}

// Reasoning streams a reasoning item whose summary arrives in deltas.
func (t *Turn) Reasoning(itemID string, deltas ...string) *Turn {
	t.stream.Reasoning(len(t.output), itemID, deltas)
	t.addItem(responseswire.NewReasoningItem(itemID, deltas))
	return t
}

// Message streams an assistant message whose text arrives in deltas.
func (t *Turn) Message(itemID string, deltas ...string) *Turn {
	t.stream.Message(len(t.output), itemID, deltas)
	t.addItem(responseswire.NewMessageItem(itemID, deltas))
	return t
}

// FunctionCall streams a function call whose arguments arrive in
// fragments of a few characters.
func (t *Turn) FunctionCall(itemID, callID, name, arguments string) *Turn {
	t.stream.FunctionCall(len(t.output), itemID, callID, name, arguments)
	t.addItem(responseswire.NewFunctionCallItem(itemID, callID, name, arguments))
	return t
}

// Complete ends the response with response.completed and its usage.
func (t *Turn) Complete(u Usage) *Turn {
	r := t.response("completed", &u)
	completed := t.created + 2
	r.CompletedAt = &completed
	t.stream.Lifecycle("completed", r)
	return t
}

// Fail ends the response with response.failed and its error.
func (t *Turn) Fail(code, message string) *Turn {
	r := t.response("failed", nil)
	r.Error = &responseswire.Error{Code: code, Message: message}
	t.stream.Lifecycle("failed", r)
	return t
}

// Incomplete ends the response with response.incomplete and its reason.
func (t *Turn) Incomplete(reason string, u Usage) *Turn {
	r := t.response("incomplete", &u)
	r.IncompleteDetails = &responseswire.Incomplete{Reason: reason}
	t.stream.Lifecycle("incomplete", r)
	return t
}

// Error ends the stream with an error event.
func (t *Turn) Error(code, message string) *Turn {
	t.stream.Error(code, message)
	return t
}

// response is the response object as the lifecycle events carry it.
func (t *Turn) response(status string, u *Usage) *responseswire.Response {
	auto := "auto"
	r := &responseswire.Response{
		ID: t.id, Object: "response", CreatedAt: t.created, Status: status,
		Model: t.model, Output: []json.RawMessage{}, ParallelToolCalls: true,
		Reasoning: responseswire.Reasoning{Effort: "low", Summary: &auto}, Store: true,
		Temperature: 1, Text: json.RawMessage(`{"format":{"type":"text"}}`),
		ToolChoice: json.RawMessage(`"auto"`), Tools: []json.RawMessage{}, TopP: 1, Truncation: "disabled",
		Metadata: json.RawMessage(`{}`),
	}
	if t.instructions != "" {
		r.Instructions = &t.instructions
	}
	if t.previousResponseID != "" {
		r.PreviousResponseID = &t.previousResponseID
	}
	if t.conversation != "" {
		r.Conversation = &responseswire.ConversationRef{ID: t.conversation}
	}
	if t.agent != "" {
		r.AgentReference = &responseswire.AgentReference{Type: "agent_reference", Name: t.agent, Version: "1"}
	}
	if status != "in_progress" {
		r.Output = append(r.Output, t.output...)
	}
	if u != nil {
		r.Usage = responseswire.NewUsage(u.Input, u.Output, u.Reasoning)
	}
	return r
}

// Encode returns v as one line of JSON, without HTML escaping.
func Encode(v any) string { return scripttest.Encode(v) }

// ItemList is a page of a conversation's items
// (GET /conversations/{id}/items), in the order asked for.
func ItemList(items ...map[string]any) string {
	l := map[string]any{"object": "list", "data": items, "first_id": nil, "last_id": nil, "has_more": false}
	if items == nil {
		l["data"] = []any{}
	} else {
		l["first_id"], l["last_id"] = items[0]["id"], items[len(items)-1]["id"]
	}
	return Encode(l)
}

// InputMessageItem is a message the client sent (role user or
// developer), as a conversation lists it.
func InputMessageItem(id, role, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "status": "completed", "role": role,
		"content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// OutputMessageItem is a message the model wrote, as a conversation
// lists it.
func OutputMessageItem(id, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}}}
}
