package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/sse"
)

// Decoder turns one streamed response body of the Responses API into
// normalized brainwire events. It is not safe for concurrent use.
//
// Mapping:
//   - response.created, .queued and .in_progress become AgentRunStatus
//     (queued or in_progress);
//   - the text deltas of reasoning summaries, raw reasoning, output text
//     and refusals become AgentTextChunk, one per non-empty delta;
//   - each function_call item, once done (response.output_item.done, or
//     the output of response.completed if that event never came), becomes
//     AgentToolCall;
//   - response.completed becomes AgentUsage, then AgentRunStatus:
//     requires_action when the response asked for function calls (the
//     Responses API calls such a response "completed"; the run goes on
//     once brainwire has answered them), else completed;
//   - response.failed and response.incomplete become AgentUsage (when
//     reported) and AgentRunStatus failed or incomplete with the error or
//     the reason;
//   - the error event (type "error", or a payload with a top-level
//     "error") becomes AgentError, or when it is not the service's JSON
//     error, the stream's failure.
//
// Events are dispatched on their event: name, or on data.type when the
// frame has no name. Unknown types are skipped. Every event carries the
// conversation (ThreadID) and the response (RunID) once known.
type Decoder struct {
	sr *sse.Reader
	// p reads the payloads: scanPayloads, or in tests the encoding/json
	// reference it is held to.
	p payloads

	conversationID string
	responseID     string
	status         brainwire.RunStatus
	terminal       bool // a terminal event came: what follows is ignored
	sawError       bool
	calls          []string // call ids of this response's function calls
	err            error    // sticky: io.EOF at the end, or the failure

	queue []brainwire.AgentEvent // decoded but not yet returned
	qi    int
	delta deltaPayload
	resp  Response
}

// NewDecoder returns a Decoder reading the event stream r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{sr: sse.NewReader(r), p: &scanPayloads{}}
}

// SetConversation seeds the conversation id stamped on events, for a
// response created in a conversation the caller already knows.
func (d *Decoder) SetConversation(id string) { d.conversationID = id }

// ConversationID returns the conversation the response belongs to, if any.
func (d *Decoder) ConversationID() string { return d.conversationID }

// ResponseID returns the response's id, once known.
func (d *Decoder) ResponseID() string { return d.responseID }

// Status returns the last status the stream reported: requires_action for
// a response that completed asking for function calls.
func (d *Decoder) Status() brainwire.RunStatus { return d.status }

// Errored reports whether the stream ended in an error event.
func (d *Decoder) Errored() bool { return d.sawError }

// Next returns the next event. It returns io.EOF at the end of a body
// whose response reached a terminal event (completed, failed,
// incomplete, error), or at "data: [DONE]"; a read error after the
// terminal event is an end too, as nothing is lost. A body that ends
// before a terminal event was cut: the error wraps io.ErrUnexpectedEOF.
// A malformed payload of an event the decoder reads is an error naming
// the event. Errors are sticky.
func (d *Decoder) Next() (brainwire.AgentEvent, error) {
	if d.qi < len(d.queue) {
		ev := d.queue[d.qi]
		d.queue[d.qi] = brainwire.AgentEvent{}
		d.qi++
		return ev, nil
	}
	d.queue, d.qi = d.queue[:0], 0
	if d.err != nil {
		return brainwire.AgentEvent{}, d.err
	}
	for {
		sev, err := d.sr.Next()
		if err != nil {
			return d.fail(d.endError(err))
		}
		if bytes.HasPrefix(sev.Data, doneData) {
			return d.fail(io.EOF)
		}
		if d.terminal {
			continue // the response is over; the server should have ended the stream
		}
		t := typeOf(sev.Name)
		if len(sev.Name) == 0 || t.isText() {
			// The hot path: text deltas are read by the scanner and
			// returned as they are, without queueing.
			if err := d.p.delta(sev.Data, &d.delta); err != nil {
				return d.fail(fmt.Errorf("decoding %s event: %w", nameOf(sev.Name), err))
			}
			if len(sev.Name) == 0 {
				t = d.delta.typ
				if !d.delta.hasType && d.delta.hasError {
					t = eventError
				}
			}
			if t.isText() {
				if d.delta.delta == "" {
					continue
				}
				text := d.delta.delta
				d.delta.delta = ""
				return brainwire.AgentEvent{Kind: brainwire.AgentTextChunk, ThreadID: d.conversationID, RunID: d.responseID, Text: text}, nil
			}
		}
		switch t {
		case eventCreated, eventQueued, eventInProgress, eventCompleted, eventFailed, eventIncomplete:
			if err := d.lifecycle(t, sev.Data); err != nil {
				return d.fail(fmt.Errorf("decoding %s event: %w", nameOf(sev.Name), err))
			}
		case eventOutputItemDone:
			if !bytes.Contains(sev.Data, functionCallType) {
				continue // only function calls are read from done items
			}
			if err := d.itemDone(sev.Data); err != nil {
				return d.fail(fmt.Errorf("decoding %s event: %w", nameOf(sev.Name), err))
			}
		case eventError:
			d.sawError, d.terminal = true, true
			code, message, ok := errorPayload(sev.Data)
			if !ok {
				return d.fail(unreadableError(sev.Data))
			}
			ev := d.event(brainwire.AgentError)
			ev.ErrorCode, ev.ErrorMessage = code, message
			d.queue = append(d.queue, ev)
		}
		if len(d.queue) > 0 {
			return d.Next()
		}
	}
}

var (
	doneData         = []byte("[DONE]")
	functionCallType = []byte(`"function_call"`)
)

func nameOf(name []byte) string {
	if len(name) == 0 {
		return "unnamed"
	}
	return string(name)
}

func (d *Decoder) fail(err error) (brainwire.AgentEvent, error) {
	d.err = err
	return brainwire.AgentEvent{}, err
}

func (d *Decoder) endError(err error) error {
	if d.terminal {
		return io.EOF
	}
	if err != io.EOF {
		return fmt.Errorf("reading event stream: %w", err)
	}
	status := string(d.status)
	if status == "" {
		status = "not yet created"
	}
	return fmt.Errorf("event stream ended before the response finished (it was %s): %w", status, io.ErrUnexpectedEOF)
}

func (d *Decoder) event(kind brainwire.AgentEventKind) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: kind, ThreadID: d.conversationID, RunID: d.responseID}
}

// lifecycle reads a response.* event carrying the response object.
func (d *Decoder) lifecycle(t eventType, data []byte) error {
	resp := &d.resp
	if err := d.p.response(data, resp); err != nil {
		return err
	}
	if resp.ID != "" {
		d.responseID = resp.ID
	}
	if id := resp.ConversationID(); id != "" {
		d.conversationID = id
	}
	var status brainwire.RunStatus
	switch t {
	case eventCreated, eventQueued, eventInProgress:
		status = brainwire.RunInProgress
		if t == eventQueued || resp.Status == "queued" {
			status = brainwire.RunQueued
		}
	case eventCompleted:
		d.usage(resp)
		for _, it := range resp.Output {
			d.call(it)
		}
		status = brainwire.RunCompleted
		if len(d.calls) > 0 {
			status = brainwire.RunRequiresAction
		}
		d.terminal = true
	case eventFailed:
		d.usage(resp)
		status = brainwire.RunFailed
		d.terminal = true
	case eventIncomplete:
		d.usage(resp)
		status = brainwire.RunIncomplete
		d.terminal = true
	}
	d.status = status
	ev := d.event(brainwire.AgentRunStatus)
	ev.Status = status
	switch status {
	case brainwire.RunFailed:
		ev.ErrorCode, ev.ErrorMessage = "server_error", "the response failed"
		if e := resp.Error; e != nil {
			ev.ErrorCode = orDefault(string(e.Code), ev.ErrorCode)
			ev.ErrorMessage = orDefault(string(e.Message), ev.ErrorMessage)
		}
	case brainwire.RunIncomplete:
		reason := "unknown"
		if resp.IncompleteDetails != nil && resp.IncompleteDetails.Reason != "" {
			reason = string(resp.IncompleteDetails.Reason)
		}
		ev.ErrorCode, ev.ErrorMessage = reason, "the response ended incomplete: "+reason
	}
	d.queue = append(d.queue, ev)
	return nil
}

func (d *Decoder) usage(resp *Response) {
	u := resp.Usage
	if u == nil {
		return
	}
	ev := d.event(brainwire.AgentUsage)
	ev.Usage = brainwire.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.OutputTokensDetails != nil {
		ev.Usage.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	}
	d.queue = append(d.queue, ev)
}

// itemDone reads response.output_item.done: a function call is final.
func (d *Decoder) itemDone(data []byte) error {
	var it OutputItem
	ok, err := d.p.item(data, &it)
	if ok && err == nil {
		d.call(it)
	}
	return err
}

// call queues AgentToolCall for a function call item not seen before.
func (d *Decoder) call(it OutputItem) {
	if it.Type != "function_call" {
		return
	}
	id := it.CallID
	if id == "" {
		id = it.ID
	}
	for _, seen := range d.calls {
		if seen == id {
			return
		}
	}
	d.calls = append(d.calls, id)
	ev := d.event(brainwire.AgentToolCall)
	ev.Tool = brainwire.ToolCall{
		ID:        id,
		Name:      it.Name,
		Arguments: it.Arguments.JSON(),
		ThreadID:  d.conversationID,
		RunID:     d.responseID,
	}
	d.queue = append(d.queue, ev)
}

// errorPayload reads an error event: the API's flat {"code","message"}, or
// an {"error":{...}} or {"error":"..."} as proxies and older servers send,
// the service's words; ok is false for anything else (a gateway's page,
// plain text, JSON with neither), which is no message for people.
func errorPayload(data []byte) (code, message string, ok bool) {
	var v struct {
		Code    lenientString   `json:"code"`
		Message lenientString   `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &v) != nil {
		return "", "", false
	}
	code, message = string(v.Code), string(v.Message)
	var inner struct {
		Code    lenientString `json:"code"`
		Message lenientString `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(v.Error, &inner) == nil:
		code, message = orDefault(string(inner.Code), code), orDefault(string(inner.Message), message)
	case json.Unmarshal(v.Error, &s) == nil:
		message = orDefault(s, message)
	}
	return code, message, code != "" || message != ""
}

// unreadableError is the failure of a stream whose error event is not the
// service's JSON error: people are told that much, and the payload is kept
// in the error, for the log and telemetry.
func unreadableError(data []byte) error {
	return &upstreamError{Msg: "the agent service reported an error brainwire cannot read",
		Err: fmt.Errorf("error event: %s", agenterr.BodyText(data))}
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// lenientString reads a JSON string, or the literal text of a number or
// boolean; null and anything else read as "". Error codes and reasons
// are strings in the specification, but a stream must not fail over one
// that is not.
type lenientString string

// UnmarshalJSON implements json.Unmarshaler.
func (s *lenientString) UnmarshalJSON(b []byte) error {
	var str string
	if json.Unmarshal(b, &str) == nil {
		*s = lenientString(str)
		return nil
	}
	var n json.Number
	if json.Unmarshal(b, &n) == nil {
		*s = lenientString(n.String())
		return nil
	}
	var v bool
	if json.Unmarshal(b, &v) == nil {
		*s = lenientString(strconv.FormatBool(v))
	}
	return nil
}

// Arguments are a function call's arguments: a JSON object encoded in a
// string, as the specification has it (an object sent as is is accepted
// too).
type Arguments json.RawMessage

// UnmarshalJSON implements json.Unmarshaler.
func (a *Arguments) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*a = Arguments(s)
		return nil
	}
	if string(b) == "null" {
		*a = nil
		return nil
	}
	*a = append((*a)[:0], b...)
	return nil
}

// JSON returns the arguments as a JSON value.
func (a Arguments) JSON() json.RawMessage {
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(a)
}
