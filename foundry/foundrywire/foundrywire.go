// Package foundrywire is the wire format of the Foundry Agent Service
// threads/runs API: the thread, run, step and message objects its streams
// and answers carry, the deltas, the error bodies, and the frames of its
// event streams. Members are in the order of recordings of the service;
// nullable members are pointers (or nil json.RawMessage) so they encode as
// null. The simulator's threads face and foundrytest write through it;
// the foundry provider reads through it.
package foundrywire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Thread is a thread object (thread.created).
type Thread struct {
	ID            string          `json:"id"`
	Object        string          `json:"object"`
	CreatedAt     int64           `json:"created_at"`
	Metadata      json.RawMessage `json:"metadata"`
	ToolResources json.RawMessage `json:"tool_resources"`
}

// Run is a run object, the payload of every thread.run.* event.
type Run struct {
	ID                  string            `json:"id"`
	Object              string            `json:"object"`
	CreatedAt           int64             `json:"created_at"`
	AssistantID         string            `json:"assistant_id"`
	ThreadID            string            `json:"thread_id"`
	Status              string            `json:"status"`
	StartedAt           *int64            `json:"started_at"`
	ExpiresAt           *int64            `json:"expires_at"`
	CancelledAt         *int64            `json:"cancelled_at"`
	FailedAt            *int64            `json:"failed_at"`
	CompletedAt         *int64            `json:"completed_at"`
	RequiredAction      *RequiredAction   `json:"required_action"`
	LastError           *LastError        `json:"last_error"`
	Model               string            `json:"model"`
	Instructions        string            `json:"instructions"`
	Tools               []json.RawMessage `json:"tools"`
	ToolResources       json.RawMessage   `json:"tool_resources"`
	Metadata            json.RawMessage   `json:"metadata"`
	Temperature         Float             `json:"temperature"`
	TopP                Float             `json:"top_p"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	MaxPromptTokens     *int64            `json:"max_prompt_tokens"`
	TruncationStrategy  json.RawMessage   `json:"truncation_strategy"`
	IncompleteDetails   json.RawMessage   `json:"incomplete_details"`
	Usage               *Usage            `json:"usage"`
	ResponseFormat      json.RawMessage   `json:"response_format"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   bool              `json:"parallel_tool_calls"`
}

// RunState mirrors the members of a Run that a client follows a run by:
// a stream carries the run object, instructions and tools included, on
// every status change, and reading only these spares copying the rest.
// With it, the threads face under brainwire-load (-n 300 -telemetry, nine
// alternating pairs) costs the server -0.04 ms CPU and +10 KiB per stream
// against the hand-made reader it replaced (pairs spread ±0.9 ms).
type RunState struct {
	ID             string          `json:"id"`
	ThreadID       string          `json:"thread_id"`
	Status         string          `json:"status"`
	RequiredAction *RequiredAction `json:"required_action"`
	LastError      *LastError      `json:"last_error"`
	Usage          *Usage          `json:"usage"`
}

// RequiredAction is a run's required_action.
type RequiredAction struct {
	Type              string            `json:"type"`
	SubmitToolOutputs SubmitToolOutputs `json:"submit_tool_outputs"`
}

// SubmitToolOutputs lists the calls a run waits for.
type SubmitToolOutputs struct {
	ToolCalls []RequiredCall `json:"tool_calls"`
}

// RequiredCall is one call of a required action.
type RequiredCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a required call's function; Arguments is JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// LastError is a failed run's or step's last_error.
type LastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage is a run's or a step's token usage.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// Step is a run step object (thread.run.step.*).
type Step struct {
	ID          string      `json:"id"`
	Object      string      `json:"object"`
	CreatedAt   int64       `json:"created_at"`
	RunID       string      `json:"run_id"`
	AssistantID string      `json:"assistant_id"`
	ThreadID    string      `json:"thread_id"`
	Type        string      `json:"type"`
	Status      string      `json:"status"`
	CancelledAt *int64      `json:"cancelled_at"`
	CompletedAt *int64      `json:"completed_at"`
	ExpiresAt   *int64      `json:"expires_at"`
	FailedAt    *int64      `json:"failed_at"`
	LastError   *LastError  `json:"last_error"`
	StepDetails StepDetails `json:"step_details"`
	Usage       *Usage      `json:"usage"`
}

// StepDetails is a step's step_details: MessageCreation or ToolCalls.
type StepDetails struct {
	Type            string           `json:"type"`
	MessageCreation *MessageCreation `json:"message_creation,omitempty"`
	ToolCalls       *[]StepToolCall  `json:"tool_calls,omitempty"`
}

// MessageCreation names the message a step creates.
type MessageCreation struct {
	MessageID string `json:"message_id"`
}

// StepToolCall is a call of a tool-calls step.
type StepToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function StepFunction `json:"function"`
}

// StepFunction is a step call's function; Output is null until submitted.
type StepFunction struct {
	Name      string  `json:"name"`
	Arguments string  `json:"arguments"`
	Output    *string `json:"output"`
}

// StepDelta is the payload of thread.run.step.delta.
type StepDelta struct {
	ID     string          `json:"id"`
	Object string          `json:"object"`
	Delta  StepDeltaDetail `json:"delta"`
}

// StepDeltaDetail is a step delta's delta.
type StepDeltaDetail struct {
	StepDetails DeltaStepDetails `json:"step_details"`
}

// DeltaStepDetails carries the fragments of a step delta's calls.
type DeltaStepDetails struct {
	Type      string          `json:"type"`
	ToolCalls []DeltaToolCall `json:"tool_calls"`
}

// DeltaToolCall is one call's fragment: the first carries ID and name.
type DeltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type"`
	Function DeltaFunction `json:"function"`
}

// DeltaFunction is a call fragment's function.
type DeltaFunction struct {
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output,omitempty"` // null on a call's first chunk only
}

// Message is a message object (thread.message.*).
type Message struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	CreatedAt         int64             `json:"created_at"`
	AssistantID       *string           `json:"assistant_id"`
	ThreadID          string            `json:"thread_id"`
	RunID             *string           `json:"run_id"`
	Status            string            `json:"status"`
	IncompleteDetails json.RawMessage   `json:"incomplete_details"`
	IncompleteAt      *int64            `json:"incomplete_at"`
	CompletedAt       *int64            `json:"completed_at"`
	Role              string            `json:"role"`
	Content           []ContentPart     `json:"content"`
	Attachments       []json.RawMessage `json:"attachments"`
	Metadata          json.RawMessage   `json:"metadata"`
}

// ContentPart is one text part of a message.
type ContentPart struct {
	Type string      `json:"type"`
	Text ContentText `json:"text"`
}

// ContentText is a text part's text.
type ContentText struct {
	Value       string            `json:"value"`
	Annotations []json.RawMessage `json:"annotations"`
}

// MessageDelta is the payload of thread.message.delta.
type MessageDelta struct {
	ID     string             `json:"id"`
	Object string             `json:"object"`
	Delta  MessageDeltaDetail `json:"delta"`
}

// MessageDeltaDetail is a message delta's delta.
type MessageDeltaDetail struct {
	Content []DeltaContent `json:"content"`
}

// DeltaContent is one content fragment of a message delta.
type DeltaContent struct {
	Index int       `json:"index"`
	Type  string    `json:"type"`
	Text  DeltaText `json:"text"`
}

// DeltaText is a content fragment's text.
type DeltaText struct {
	Value       string             `json:"value"`
	Annotations *[]json.RawMessage `json:"annotations,omitempty"` // [] on the first chunk only
}

// DeltaValues mirrors a MessageDelta down to its texts' values, the
// members a client reads from the most frequent event of a stream.
type DeltaValues struct {
	Delta struct {
		Content []struct {
			Text struct {
				Value string `json:"value"`
			} `json:"text"`
		} `json:"content"`
	} `json:"delta"`
}

// List is a page of a list operation.
type List struct {
	Object  string `json:"object"`
	Data    any    `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

// Assistant is an assistant (agent) object.
type Assistant struct {
	ID           string            `json:"id"`
	Object       string            `json:"object"`
	CreatedAt    int64             `json:"created_at"`
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Tools        []json.RawMessage `json:"tools"`
	Metadata     json.RawMessage   `json:"metadata"`
}

// ErrorEvent is the payload of an in-stream error event.
type ErrorEvent struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorBody is the service's non-2xx body.
type ErrorBody struct {
	Error APIError `json:"error"`
}

// APIError is an ErrorBody's error.
type APIError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
}

// Float encodes whole numbers with a decimal point (1.0), as the service
// does for temperature and top_p.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(f), 'f', -1, 64)
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// AppendFrame appends the frame of one event to dst: "event: " name,
// "data: " payload, a blank line.
func AppendFrame(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...)
}

// The event that ends every stream: done, with data [DONE].
const (
	DoneEvent = "done"
	DoneData  = "[DONE]"
)

// TextDelta is the thread.message.delta of one text chunk; the service
// lists annotations ([]) on a message's first chunk only.
func TextDelta(msgID, text string, first bool) MessageDelta {
	d := MessageDelta{ID: msgID, Object: "thread.message.delta", Delta: MessageDeltaDetail{
		Content: []DeltaContent{{Index: 0, Type: "text", Text: DeltaText{Value: text}}},
	}}
	if first {
		d.Delta.Content[0].Text.Annotations = &[]json.RawMessage{}
	}
	return d
}

// ToolDelta is the thread.run.step.delta of one call fragment.
func ToolDelta(stepID string, c DeltaToolCall) StepDelta {
	return StepDelta{ID: stepID, Object: "thread.run.step.delta", Delta: StepDeltaDetail{
		StepDetails: DeltaStepDetails{Type: "tool_calls", ToolCalls: []DeltaToolCall{c}},
	}}
}

// CallStart is the first fragment of call index: its id and name, empty
// arguments, a null output.
func CallStart(index int, id, name string) DeltaToolCall {
	return DeltaToolCall{Index: index, ID: id, Type: "function",
		Function: DeltaFunction{Name: name, Arguments: "", Output: json.RawMessage("null")}}
}

// CallArguments is a later fragment of call index: a piece of its arguments.
func CallArguments(index int, fragment string) DeltaToolCall {
	return DeltaToolCall{Index: index, Type: "function", Function: DeltaFunction{Arguments: fragment}}
}

// TextContent is a completed message's content: one text part.
func TextContent(text string) []ContentPart {
	return []ContentPart{{Type: "text", Text: ContentText{Value: text, Annotations: []json.RawMessage{}}}}
}
