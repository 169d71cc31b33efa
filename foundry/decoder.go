package foundry

import (
	"encoding/json"
	"fmt"

	"io"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/agenthttp"
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
	events   *agenthttp.Events
	threadID string
	runID    string
	status   brainwire.RunStatus
	sawError bool
}

// NewDecoder returns a Decoder reading the event stream r.
func NewDecoder(r io.Reader) *Decoder {
	d := &Decoder{}
	d.events = agenthttp.NewEvents(r, d.event, d.end)
	return d
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
func (d *Decoder) Next() (brainwire.AgentEvent, error) { return d.events.Next() }

func (d *Decoder) event(dst []brainwire.AgentEvent, ev sse.Event) ([]brainwire.AgentEvent, error) {
	switch string(ev.Name) {
	case "thread.message.delta":
		var m foundrywire.DeltaValues
		if err := agenthttp.Decode("thread.message.delta", ev.Data, &m); err != nil {
			return dst, err
		}
		for _, c := range m.Delta.Content {
			if c.Text.Value != "" {
				out := d.new(brainwire.AgentTextChunk)
				out.Text = c.Text.Value
				dst = append(dst, out)
			}
		}
	case "thread.run.created", "thread.run.queued", "thread.run.in_progress",
		"thread.run.requires_action", "thread.run.completed", "thread.run.incomplete",
		"thread.run.failed", "thread.run.cancelling", "thread.run.cancelled", "thread.run.expired":
		return d.run(dst, string(ev.Name), ev.Data)
	case "thread.created":
		var th foundrywire.Thread
		if err := agenthttp.Decode("thread.created", ev.Data, &th); err != nil {
			return dst, err
		}
		if th.ID != "" {
			d.threadID = th.ID
		}
	case "error":
		d.sawError = true
		code, message, err := agenterr.ErrorEvent(ev.Data)
		if err != nil {
			return dst, err
		}
		out := d.new(brainwire.AgentError)
		out.ErrorCode, out.ErrorMessage = code, message
		dst = append(dst, out)
	case foundrywire.DoneEvent:
		return dst, io.EOF
	}
	return dst, nil
}

// end says what the body's end means: the run's end, when it was over or
// waiting for tool outputs; else the stream was cut.
func (d *Decoder) end(dst []brainwire.AgentEvent, err error) ([]brainwire.AgentEvent, error) {
	if err != io.EOF {
		return dst, fmt.Errorf("reading event stream: %w", err)
	}
	if d.status.Terminal() || d.status == brainwire.RunRequiresAction || d.sawError {
		return dst, io.EOF
	}
	status := string(d.status)
	if status == "" {
		status = "unknown"
	}
	return dst, fmt.Errorf("event stream ended without done while the run was %s: %w", status, io.ErrUnexpectedEOF)
}

func (d *Decoder) new(kind brainwire.AgentEventKind) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: kind, ThreadID: d.threadID, RunID: d.runID}
}

func (d *Decoder) run(dst []brainwire.AgentEvent, name string, data []byte) ([]brainwire.AgentEvent, error) {
	var run foundrywire.RunState
	if err := agenthttp.Decode(name, data, &run); err != nil {
		return dst, err
	}
	if run.ID != "" {
		d.runID = run.ID
	}
	if run.ThreadID != "" {
		d.threadID = run.ThreadID
	}
	status := brainwire.RunStatus(run.Status)
	if status == "" {
		status = brainwire.RunStatus(strings.TrimPrefix(name, "thread.run."))
		if status == "created" {
			status = brainwire.RunQueued
		}
	}
	d.status = status

	if status == brainwire.RunRequiresAction && run.RequiredAction != nil {
		for _, tc := range run.RequiredAction.SubmitToolOutputs.ToolCalls {
			ev := d.new(brainwire.AgentToolCall)
			ev.Tool = brainwire.ToolCall{
				ID:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: json.RawMessage(tc.Function.Arguments),
				ThreadID:  d.threadID,
				RunID:     d.runID,
			}
			dst = append(dst, ev)
		}
	}
	if status.Terminal() && run.Usage != nil {
		ev := d.new(brainwire.AgentUsage)
		ev.Usage = brainwire.Usage{
			PromptTokens:     run.Usage.PromptTokens,
			CompletionTokens: run.Usage.CompletionTokens,
			TotalTokens:      run.Usage.TotalTokens,
		}
		dst = append(dst, ev)
	}
	ev := d.new(brainwire.AgentRunStatus)
	ev.Status = status
	if run.LastError != nil {
		ev.ErrorCode, ev.ErrorMessage = run.LastError.Code, run.LastError.Message
	}
	return append(dst, ev), nil
}
