package adk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"strings"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/textcut"
)

// An event of a /run_sse stream is read into adkwire.ClientEvent: the
// members brainwire acts on of the API server's camelCase Event JSON (an
// LlmResponse plus the event's own fields), or of an error frame.

// StreamError is what an error frame says: an exception the API server
// caught after the stream had started, {"error": "...", "error_details":
// {...}}. The decoder makes it an AgentError event.
type StreamError struct {
	// Type is the exception's class ("ServerError", "ValueError"), when
	// the server says (ADK 2.4 and later).
	Type    string
	Message string
}

// isFinalResponse is ADK's Event.is_final_response: the event ends the
// agent's turn. A function call the client must answer does; one the
// agent runs itself, or its response, does not.
func isFinalResponse(ev *adkwire.ClientEvent) bool {
	if ev.Actions.SkipSummarization || len(ev.LongRunningToolIDs) > 0 {
		return true
	}
	if partial(ev) {
		return false
	}
	for _, p := range parts(ev) {
		if p.FunctionCall != nil || p.FunctionResponse != nil {
			return false
		}
	}
	return true
}

// partial reports whether ev is a streamed chunk; the model call's
// aggregated event that follows repeats the chunks' text and is not.
func partial(ev *adkwire.ClientEvent) bool { return ev.Partial != nil && *ev.Partial }

// parts is ev's content's parts.
func parts(ev *adkwire.ClientEvent) []adkwire.Part {
	if ev.Content == nil {
		return nil
	}
	return ev.Content.Parts
}

// role is ev's content's role: "model", or "user" for the function
// responses of tools the agent ran itself.
func role(ev *adkwire.ClientEvent) string {
	if ev.Content == nil {
		return ""
	}
	return ev.Content.Role
}

// streamError is the error frame ev is, or nil when it is an event; ok is
// false for an error brainwire cannot read.
func streamError(ev *adkwire.ClientEvent) (se *StreamError, ok bool) {
	if len(ev.Error) == 0 || string(ev.Error) == "null" {
		return nil, true
	}
	msg, ok := errorText(ev.Error)
	se = &StreamError{Message: msg}
	if d := ev.ErrorDetails; d != nil {
		se.Type = d.ErrorType
		if d.ErrorMessage != "" {
			se.Message, ok = d.ErrorMessage, true
		}
	}
	return se, ok
}

// errorText reads the "error" member: a string (what ADK sends), or an
// object with a message (what a proxy in between might send); ok is false
// for anything else.
func errorText(raw json.RawMessage) (msg string, ok bool) {
	var s string
	if jsonv1.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var obj struct {
		Message string `json:"message"`
	}
	if jsonv1.Unmarshal(raw, &obj) == nil && obj.Message != "" {
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

// decodePayload decodes one data payload: an event, or an error frame
// (se). An error frame an old server wrote as invalid JSON still reads as
// one; any other payload that is not an event is an error.
func decodePayload(data []byte) (ev adkwire.ClientEvent, se *StreamError, err error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// null would decode to an empty event, which reads as a final answer.
		err = errors.New("the payload is not a JSON object")
	} else if err = jsonv1.Unmarshal(data, &ev); err == nil {
		var ok bool
		if se, ok = streamError(&ev); ok {
			return ev, se, nil
		}
		// Not the server's words: a frame brainwire cannot read.
		err = errors.New("its error is neither a message nor an object with one")
	}
	if se, ok := legacyError(data); ok {
		return adkwire.ClientEvent{}, se, nil
	}
	return adkwire.ClientEvent{}, nil, fmt.Errorf("decoding event %s: %w", agenterr.BodyText(data), err)
}
