package adk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/textcut"
)

// Event is one ADK event of a /run_sse stream, narrowed to what brainwire
// reads. On the wire it is the API server's camelCase Event JSON (an
// LlmResponse plus the event's own fields); everything not listed here
// (modelVersion, actions' deltas, nodeInfo, ids, timestamps, ...) is
// skipped.
type Event struct {
	// InvocationID is the agent run the event belongs to ("e-<uuid>"); a
	// paused run keeps it when it resumes.
	InvocationID string
	// Author is the agent's name, or "user".
	Author string
	// Partial marks a streamed chunk; the model call's aggregated event
	// that follows repeats the chunks' text and is not partial.
	Partial bool
	// Role is the content's role: "model", or "user" for the function
	// responses of tools the agent ran itself.
	Role  string
	Parts []Part
	// LongRunningToolIDs are the function calls of this event the agent
	// hands to its client: the run pauses until their responses come.
	LongRunningToolIDs []string
	// SkipSummarization ends the run after a tool's response.
	SkipSummarization bool
	// ErrorCode and ErrorMessage report a model call that failed without
	// an exception (a finish reason such as SAFETY or MAX_TOKENS, a
	// blocked prompt).
	ErrorCode    string
	ErrorMessage string
	Usage        Usage
	HasUsage     bool
	// Err is set on an error frame: the exception that ended the stream.
	Err *StreamError
}

// Part is one part of an event's content.
type Part struct {
	Text string
	// Thought marks the model's reasoning, as opposed to its answer.
	Thought          bool
	FunctionCall     *FunctionCall
	FunctionResponse *FunctionResponse
}

// FunctionCall is the model's call of a tool.
type FunctionCall struct {
	ID   string
	Name string
	// Args is the arguments object as it came; nil when absent.
	Args json.RawMessage
}

// FunctionResponse is a tool's answer, as the agent recorded it.
type FunctionResponse struct {
	ID   string
	Name string
}

// Usage is a model call's token count (Gemini's usageMetadata).
type Usage struct {
	PromptTokens     int64
	CandidatesTokens int64
	ThoughtsTokens   int64
	TotalTokens      int64
}

// StreamError is an error frame: an exception the API server caught after
// the stream had started, {"error": "...", "error_details": {...}}.
type StreamError struct {
	// Type is the exception's class ("ServerError", "ValueError"), when
	// the server says (ADK 2.4 and later).
	Type    string
	Message string
}

func (e *StreamError) Error() string {
	if e.Type != "" && !strings.HasPrefix(e.Message, e.Type+":") {
		return "adk: " + e.Type + ": " + e.Message
	}
	return "adk: " + e.Message
}

// isFinalResponse is ADK's Event.is_final_response: the event ends the
// agent's turn. A function call the client must answer does; one the
// agent runs itself, or its response, does not.
func (e *Event) isFinalResponse() bool {
	if e.SkipSummarization || len(e.LongRunningToolIDs) > 0 {
		return true
	}
	if e.Partial {
		return false
	}
	for _, p := range e.Parts {
		if p.FunctionCall != nil || p.FunctionResponse != nil {
			return false
		}
	}
	return true
}

// The wire shape an event is read from.
type (
	wireEvent struct {
		Content            *wireContent    `json:"content"`
		Partial            bool            `json:"partial"`
		InvocationID       string          `json:"invocationId"`
		Author             string          `json:"author"`
		LongRunningToolIDs []string        `json:"longRunningToolIds"`
		ErrorCode          string          `json:"errorCode"`
		ErrorMessage       string          `json:"errorMessage"`
		UsageMetadata      *wireUsage      `json:"usageMetadata"`
		Actions            *wireActions    `json:"actions"`
		Error              json.RawMessage `json:"error"`
		ErrorDetails       *wireDetails    `json:"error_details"`
	}
	wireContent struct {
		Role  string     `json:"role"`
		Parts []wirePart `json:"parts"`
	}
	wirePart struct {
		Text             string                `json:"text"`
		Thought          bool                  `json:"thought"`
		FunctionCall     *wireFunctionCall     `json:"functionCall"`
		FunctionResponse *wireFunctionResponse `json:"functionResponse"`
	}
	wireFunctionCall struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	wireFunctionResponse struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	wireUsage struct {
		PromptTokenCount     int64 `json:"promptTokenCount"`
		CandidatesTokenCount int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int64 `json:"thoughtsTokenCount"`
		TotalTokenCount      int64 `json:"totalTokenCount"`
	}
	wireActions struct {
		SkipSummarization bool `json:"skipSummarization"`
	}
	wireDetails struct {
		ErrorType    string `json:"error_type"`
		ErrorMessage string `json:"error_message"`
	}
)

// decodeJSON decodes one data payload.
func decodeJSON(data []byte) (Event, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// null would decode to an empty event, which reads as a final answer.
		return Event{}, errors.New("the payload is not a JSON object")
	}
	var w wireEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return Event{}, err
	}
	ev := Event{
		Partial:            w.Partial,
		InvocationID:       w.InvocationID,
		Author:             w.Author,
		LongRunningToolIDs: w.LongRunningToolIDs,
		ErrorCode:          w.ErrorCode,
		ErrorMessage:       w.ErrorMessage,
	}
	if len(ev.LongRunningToolIDs) == 0 {
		ev.LongRunningToolIDs = nil
	}
	if c := w.Content; c != nil {
		ev.Role = c.Role
		if len(c.Parts) > 0 {
			ev.Parts = make([]Part, len(c.Parts))
		}
		for i, p := range c.Parts {
			part := Part{Text: p.Text, Thought: p.Thought}
			if fc := p.FunctionCall; fc != nil {
				part.FunctionCall = &FunctionCall{ID: fc.ID, Name: fc.Name, Args: fc.Args}
			}
			if fr := p.FunctionResponse; fr != nil {
				part.FunctionResponse = &FunctionResponse{ID: fr.ID, Name: fr.Name}
			}
			ev.Parts[i] = part
		}
	}
	if u := w.UsageMetadata; u != nil {
		ev.HasUsage = true
		ev.Usage = Usage{PromptTokens: u.PromptTokenCount, CandidatesTokens: u.CandidatesTokenCount,
			ThoughtsTokens: u.ThoughtsTokenCount, TotalTokens: u.TotalTokenCount}
	}
	if w.Actions != nil {
		ev.SkipSummarization = w.Actions.SkipSummarization
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		msg, ok := errorText(w.Error)
		ev.Err = &StreamError{Message: msg}
		if d := w.ErrorDetails; d != nil {
			ev.Err.Type = d.ErrorType
			if d.ErrorMessage != "" {
				ev.Err.Message, ok = d.ErrorMessage, true
			}
		}
		if !ok {
			// Not the server's words: a frame brainwire cannot read.
			return Event{}, errors.New("its error is neither a message nor an object with one")
		}
	}
	return ev, nil
}

// errorText reads the "error" member: a string (what ADK sends), or an
// object with a message (what a proxy in between might send); ok is false
// for anything else.
func errorText(raw json.RawMessage) (msg string, ok bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message, true
	}
	return "", false
}

// legacyErrorPrefix starts the error frame of API servers before 1.23,
// which wrote data: {"error": "<message>"} with the message unescaped: a
// quote, a backslash or a newline in it made the payload invalid JSON.
const legacyErrorPrefix = `{"error": "`

// legacyError reads such a frame, or reports false.
func legacyError(data []byte) (*StreamError, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(data), []byte(legacyErrorPrefix))
	if !ok {
		return nil, false
	}
	msg := strings.TrimSpace(string(bytes.TrimSuffix(rest, []byte(`"}`))))
	if msg == "" {
		msg = "the agent server reported an error"
	}
	return &StreamError{Message: strings.ToValidUTF8(textcut.Ellipsis(msg, maxErrorText), "\uFFFD")}, true
}

// decodePayload decodes one data payload: an event or an error frame. An
// error frame an old server wrote as invalid JSON still reads as one; any
// other payload that is not an event is an error.
func decodePayload(data []byte) (Event, error) {
	ev, err := decodeJSON(data)
	if err == nil {
		return ev, nil
	}
	if se, ok := legacyError(data); ok {
		return Event{Err: se}, nil
	}
	return Event{}, &malformedError{payload: agenterr.BodyText(data), err: err}
}

// malformedError is a payload that is neither an event nor an error frame.
type malformedError struct {
	payload string
	err     error
}

func (e *malformedError) Error() string {
	return fmt.Sprintf("decoding event %s: %v", e.payload, e.err)
}
func (e *malformedError) Unwrap() error { return e.err }
