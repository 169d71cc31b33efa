package foundry

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/jsonscan"
	"github.com/brainwire/brainwire/sse"
)

// Decoder turns one streamed response body of the threads/runs API into
// normalized brainwire events. It is not safe for concurrent use.
//
// Mapping: thread.run.<status> events become AgentRunStatus (a failed run
// carries last_error; thread.run.created reports the new run's status,
// queued); thread.run.requires_action is preceded by one
// AgentToolCall per requested function call; a terminal run with usage is
// preceded by AgentUsage (usage is taken from the run only, never from
// steps, so it is never counted twice); every non-empty text value of a
// thread.message.delta becomes an AgentTextChunk; the error event becomes
// AgentError, or when it is not the service's JSON error, the stream's
// failure. Step events and unknown events are skipped.
type Decoder struct {
	sr       *sse.Reader
	threadID string
	runID    string
	status   brainwire.RunStatus
	sawError bool
	err      error // sticky: io.EOF after done, or the failure

	queue   []brainwire.AgentEvent // decoded but not yet returned
	qi      int
	texts   []string
	scratch []byte
	sc      jsonscan.Scanner // run objects (runscan.go)
}

// NewDecoder returns a Decoder reading the event stream r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{sr: sse.NewReader(r)}
}

// SetRun seeds the ids stamped on events until the stream names them, for
// a stream whose run is already known (submit_tool_outputs).
func (d *Decoder) SetRun(threadID, runID string) {
	d.threadID, d.runID = threadID, runID
}

// ThreadID returns the upstream thread id, once known.
func (d *Decoder) ThreadID() string { return d.threadID }

// RunID returns the upstream run id, once known.
func (d *Decoder) RunID() string { return d.runID }

// Status returns the last run status the stream reported.
func (d *Decoder) Status() brainwire.RunStatus { return d.status }

// Next returns the next event. It returns io.EOF at the done event, or at
// the end of a body whose run is terminal, waiting for tool outputs, or
// that reported an error event. A body that ends otherwise was cut: the
// error wraps io.ErrUnexpectedEOF. A malformed payload of an event the
// decoder needs is an error naming the event. Errors are sticky.
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
		if string(sev.Name) == "thread.message.delta" {
			// The hot path: build the event in place, without queueing.
			texts, err := d.deltaTexts(sev.Data)
			if err != nil {
				return d.fail(err)
			}
			if len(texts) == 1 {
				if t := texts[0]; t != "" {
					texts[0] = ""
					return brainwire.AgentEvent{Kind: brainwire.AgentTextChunk, ThreadID: d.threadID, RunID: d.runID, Text: t}, nil
				}
				continue
			}
			for i, t := range texts {
				if t != "" {
					ev := d.event(brainwire.AgentTextChunk)
					ev.Text = t
					d.queue = append(d.queue, ev)
				}
				texts[i] = ""
			}
			if len(d.queue) > 0 {
				return d.Next()
			}
			continue
		}
		switch string(sev.Name) { // compared without allocating
		case "thread.run.created", "thread.run.queued", "thread.run.in_progress",
			"thread.run.requires_action", "thread.run.completed", "thread.run.incomplete",
			"thread.run.failed", "thread.run.cancelling", "thread.run.cancelled", "thread.run.expired":
			return d.run(sev.Name, sev.Data)
		case "thread.created":
			var th struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(sev.Data, &th); err != nil {
				return d.fail(fmt.Errorf("decoding thread.created event: %w", err))
			}
			if th.ID != "" {
				d.threadID = th.ID
			}
		case "error":
			d.sawError = true
			code, message, ok := errorPayload(sev.Data)
			if !ok {
				return d.fail(unreadableError(sev.Data))
			}
			ev := d.event(brainwire.AgentError)
			ev.ErrorCode, ev.ErrorMessage = code, message
			return ev, nil
		case "done":
			d.err = io.EOF
			return brainwire.AgentEvent{}, io.EOF
		}
	}
}

func (d *Decoder) fail(err error) (brainwire.AgentEvent, error) {
	d.err = err
	return brainwire.AgentEvent{}, err
}

func (d *Decoder) endError(err error) error {
	if err != io.EOF {
		return fmt.Errorf("reading event stream: %w", err)
	}
	if d.status.Terminal() || d.status == brainwire.RunRequiresAction || d.sawError {
		return io.EOF
	}
	status := string(d.status)
	if status == "" {
		status = "unknown"
	}
	return fmt.Errorf("event stream ended without done while the run was %s: %w", status, io.ErrUnexpectedEOF)
}

func (d *Decoder) event(kind brainwire.AgentEventKind) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: kind, ThreadID: d.threadID, RunID: d.runID}
}

// deltaTexts returns the text values of a thread.message.delta payload,
// in a slice reused by the next call.
func (d *Decoder) deltaTexts(data []byte) ([]string, error) {
	texts, scratch, err := deltaTexts(data, d.texts[:0], d.scratch)
	d.texts, d.scratch = texts, scratch
	if err != nil {
		return nil, fmt.Errorf("decoding thread.message.delta event: %w", err)
	}
	return texts, nil
}

func (d *Decoder) run(name, data []byte) (brainwire.AgentEvent, error) {
	var run Run
	if err := decodeRun(&d.sc, data, &run); err != nil {
		return d.fail(fmt.Errorf("decoding %s event: %w", name, err))
	}
	if run.ID != "" {
		d.runID = run.ID
	}
	if run.ThreadID != "" {
		d.threadID = run.ThreadID
	}
	status := run.Status
	if status == "" {
		status = brainwire.RunStatus(strings.TrimPrefix(string(name), "thread.run."))
		if status == "created" {
			status = brainwire.RunQueued
		}
	}
	d.status = status

	if status == brainwire.RunRequiresAction && run.RequiredAction != nil && run.RequiredAction.SubmitToolOutputs != nil {
		for _, tc := range run.RequiredAction.SubmitToolOutputs.ToolCalls {
			ev := d.event(brainwire.AgentToolCall)
			ev.Tool = brainwire.ToolCall{
				ID:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: json.RawMessage(tc.Function.Arguments),
				ThreadID:  d.threadID,
				RunID:     d.runID,
			}
			d.queue = append(d.queue, ev)
		}
	}
	if status.Terminal() && run.Usage != nil {
		ev := d.event(brainwire.AgentUsage)
		ev.Usage = brainwire.Usage{
			PromptTokens:     run.Usage.PromptTokens,
			CompletionTokens: run.Usage.CompletionTokens,
			TotalTokens:      run.Usage.TotalTokens,
		}
		d.queue = append(d.queue, ev)
	}
	ev := d.event(brainwire.AgentRunStatus)
	ev.Status = status
	if run.LastError != nil {
		ev.ErrorCode, ev.ErrorMessage = run.LastError.Code, run.LastError.Message
	}
	d.queue = append(d.queue, ev)

	first := d.queue[0]
	d.queue[0] = brainwire.AgentEvent{}
	d.qi = 1
	return first, nil
}

// errorPayload reads the error event, whose payload has no published
// schema: JSON with a message or a code (top-level or under "error"), the
// service's words; ok is false for anything else (a gateway's page, plain
// text), which is no message for people.
func errorPayload(data []byte) (code, message string, ok bool) {
	var v map[string]any
	if json.Unmarshal(data, &v) != nil {
		return "", "", false
	}
	if inner, ok := v["error"].(map[string]any); ok {
		code, message = scalar(inner["code"]), scalar(inner["message"])
	} else if s, ok := v["error"].(string); ok {
		message = s
	}
	if message == "" {
		message = scalar(v["message"])
	}
	if code == "" {
		code = scalar(v["code"])
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

func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}
