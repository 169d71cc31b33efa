package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The objects below are the service's wire shapes. Field order follows the
// recorded streams so that a side-by-side diff reads naturally; nullable
// fields are pointers (or nil json.RawMessage) so they encode as null.

type threadObject struct {
	ID            string          `json:"id"`
	Object        string          `json:"object"`
	CreatedAt     int64           `json:"created_at"`
	Metadata      json.RawMessage `json:"metadata"`
	ToolResources json.RawMessage `json:"tool_resources"`
}

type runObject struct {
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
	RequiredAction      *requiredAction   `json:"required_action"`
	LastError           *lastError        `json:"last_error"`
	Model               string            `json:"model"`
	Instructions        string            `json:"instructions"`
	Tools               []json.RawMessage `json:"tools"`
	ToolResources       json.RawMessage   `json:"tool_resources"`
	Metadata            json.RawMessage   `json:"metadata"`
	Temperature         jsonFloat         `json:"temperature"`
	TopP                jsonFloat         `json:"top_p"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	MaxPromptTokens     *int64            `json:"max_prompt_tokens"`
	TruncationStrategy  json.RawMessage   `json:"truncation_strategy"`
	IncompleteDetails   json.RawMessage   `json:"incomplete_details"`
	Usage               *usage            `json:"usage"`
	ResponseFormat      json.RawMessage   `json:"response_format"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   bool              `json:"parallel_tool_calls"`
}

type requiredAction struct {
	Type              string            `json:"type"`
	SubmitToolOutputs submitToolOutputs `json:"submit_tool_outputs"`
}

type submitToolOutputs struct {
	ToolCalls []requiredCall `json:"tool_calls"`
}

type requiredCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type lastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func (u usage) add(o usage) usage {
	return usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

type stepObject struct {
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
	LastError   *lastError  `json:"last_error"`
	StepDetails stepDetails `json:"step_details"`
	Usage       *usage      `json:"usage"`
}

type stepDetails struct {
	Type            string           `json:"type"`
	MessageCreation *messageCreation `json:"message_creation,omitempty"`
	ToolCalls       *[]stepToolCall  `json:"tool_calls,omitempty"`
}

type messageCreation struct {
	MessageID string `json:"message_id"`
}

type stepToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function stepFunction `json:"function"`
}

type stepFunction struct {
	Name      string  `json:"name"`
	Arguments string  `json:"arguments"`
	Output    *string `json:"output"`
}

type stepDelta struct {
	ID     string          `json:"id"`
	Object string          `json:"object"`
	Delta  stepDeltaDetail `json:"delta"`
}

type stepDeltaDetail struct {
	StepDetails deltaStepDetails `json:"step_details"`
}

type deltaStepDetails struct {
	Type      string          `json:"type"`
	ToolCalls []deltaToolCall `json:"tool_calls"`
}

type deltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type"`
	Function deltaFunction `json:"function"`
}

type deltaFunction struct {
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output,omitempty"` // null on a call's first chunk only
}

type messageObject struct {
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
	Content           []contentPart     `json:"content"`
	Attachments       []json.RawMessage `json:"attachments"`
	Metadata          json.RawMessage   `json:"metadata"`
}

type contentPart struct {
	Type string      `json:"type"`
	Text contentText `json:"text"`
}

type contentText struct {
	Value       string            `json:"value"`
	Annotations []json.RawMessage `json:"annotations"`
}

type messageDelta struct {
	ID     string             `json:"id"`
	Object string             `json:"object"`
	Delta  messageDeltaDetail `json:"delta"`
}

type messageDeltaDetail struct {
	Content []deltaContent `json:"content"`
}

type deltaContent struct {
	Index int       `json:"index"`
	Type  string    `json:"type"`
	Text  deltaText `json:"text"`
}

type deltaText struct {
	Value       string             `json:"value"`
	Annotations *[]json.RawMessage `json:"annotations,omitempty"` // [] on the first chunk only
}

type listObject struct {
	Object  string `json:"object"`
	Data    any    `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

type assistantObject struct {
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

// errorEvent is the payload of an in-stream `error` event.
type errorEvent struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorBody is the service's non-2xx body.
type errorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
}

// jsonFloat encodes whole numbers with a decimal point (1.0), as the
// service does for temperature and top_p.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 64)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// marshalLine encodes v as one line of JSON without HTML escaping, so text
// reads as the service writes it.
func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func ptr[T any](v T) *T { return &v }
