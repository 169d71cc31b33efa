package adk

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
)

// Decoder turns one /run_sse response body into normalized brainwire
// events. It is not safe for concurrent use.
//
// Mapping:
//   - the stream opening is AgentRunStatus in_progress;
//   - every streamed (partial) text part, thought or answer, is an
//     AgentTextChunk as it arrives: the agent's words are all reasoning to
//     the phone;
//   - a model call's aggregated (non-partial) event repeats what its
//     partial events streamed: only text they did not stream becomes
//     chunks (all of it when the server streamed nothing, as without
//     streaming);
//   - usageMetadata of an aggregated event is an AgentUsage: one per model
//     call, so a run's usage is their sum (the same usage on the next
//     event, with nothing between, is the same call's);
//   - a function call the agent hands to its client (its id among the
//     event's longRunningToolIds) is an AgentToolCall, taken from the
//     aggregated event only; calls the agent runs itself are not
//     brainwire's;
//   - an event with errorCode is AgentRunStatus failed with its code and
//     message; an error frame is AgentError;
//   - at the end of the body: AgentRunStatus requires_action when calls
//     are waiting for their responses, completed when the agent gave its
//     final response.
//
// Events carry the session id as ThreadID and the invocation id as RunID.
type Decoder struct {
	er        *EventReader
	sessionID string
	invoID    string
	started   bool
	err       error // sticky: io.EOF at the end, or the failure

	queue []brainwire.AgentEvent
	qi    int

	// streamed counts the bytes of thought [0] and answer [1] text the
	// current model call's partial events streamed.
	streamed [2]int
	// final: the last event ended the agent's turn.
	final    bool
	failed   bool
	frameErr bool
	pending  int // function calls handed over, waiting for their responses
	// lastUsage is the usage of the last aggregated model event, while
	// nothing else has come since: servers before 1.22 report one model
	// call's usage on two events in a row (its text, then its call).
	lastUsage    Usage
	hasLastUsage bool
	// clientTools are tools the client runs: the agent must hand their
	// calls over rather than run them itself.
	clientTools map[string]bool
}

// NewDecoder returns a Decoder reading the event stream r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{er: NewEventReader(r)}
}

// SetSession sets the ids stamped on events: the session, and the
// invocation until the stream names one (a resumed run).
func (d *Decoder) SetSession(sessionID, invocationID string) {
	d.sessionID, d.invoID = sessionID, invocationID
}

// ExpectClientTools names tools the client runs. An agent that runs one of
// them itself (declared as an ordinary tool rather than a long-running
// one) would never hand the call over: the stream fails saying so.
func (d *Decoder) ExpectClientTools(names ...string) {
	if d.clientTools == nil {
		d.clientTools = make(map[string]bool, len(names))
	}
	for _, n := range names {
		d.clientTools[n] = true
	}
}

// InvocationID returns the agent run's id, once known.
func (d *Decoder) InvocationID() string { return d.invoID }

// Next returns the next event. It returns io.EOF at the end of a body
// that ended the agent's turn: a final response, function calls to answer,
// a failed model call or an error frame. A body that ends (or breaks)
// before that was cut: the error wraps io.ErrUnexpectedEOF or the read
// error. A body that breaks after it loses nothing. A payload that is not
// an event is an error. Errors are sticky.
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
	if !d.started {
		d.started = true
		ev := d.event(brainwire.AgentRunStatus)
		ev.Status = brainwire.RunInProgress
		return ev, nil
	}
	for {
		ev, err := d.er.Next()
		if err != nil {
			if err == io.EOF || d.settled() {
				return d.end(err)
			}
			var bad *malformedError
			if errors.As(err, &bad) {
				return d.fail(&upstreamError{Msg: "the agent server sent an event brainwire cannot read",
					Err: fmt.Errorf("session %s: %w", d.sessionID, err)})
			}
			return d.fail(&upstreamError{Msg: "the agent server's event stream broke off",
				Err: fmt.Errorf("reading events of session %s: %w", d.sessionID, err)})
		}
		if ev.InvocationID != "" {
			d.invoID = ev.InvocationID
		}
		if ev.Err != nil {
			d.frameErr, d.final = true, false
			out := d.event(brainwire.AgentError)
			out.ErrorCode, out.ErrorMessage = ev.Err.Type, ev.Err.Message
			return out, nil
		}
		d.final = !ev.Partial && ev.isFinalResponse()
		if ev.Role == "user" || ev.Partial {
			d.hasLastUsage = false
		}
		if ev.Role == "user" {
			continue // responses of tools the agent ran itself
		}
		if ev.Partial {
			if out, ok := d.partial(&ev); ok {
				return out, nil
			}
		} else if err := d.aggregated(&ev); err != nil {
			return d.fail(err)
		}
		if len(d.queue) > 0 {
			return d.Next()
		}
	}
}

// settled reports whether the agent's turn has ended: nothing the body
// could still bring matters.
func (d *Decoder) settled() bool { return d.final || d.failed || d.frameErr }

// end finishes the body.
func (d *Decoder) end(err error) (brainwire.AgentEvent, error) {
	if !d.settled() {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return d.fail(&upstreamError{Msg: "the agent server's event stream ended before the agent finished",
			Err: fmt.Errorf("event stream of session %s ended before the agent's turn did: %w", d.sessionID, err)})
	}
	d.err = io.EOF
	switch {
	case d.failed || d.frameErr:
		// The consumer was told why the turn ended.
	case d.pending > 0:
		ev := d.event(brainwire.AgentRunStatus)
		ev.Status = brainwire.RunRequiresAction
		return ev, nil
	case d.final:
		ev := d.event(brainwire.AgentRunStatus)
		ev.Status = brainwire.RunCompleted
		return ev, nil
	}
	return brainwire.AgentEvent{}, io.EOF
}

func (d *Decoder) fail(err error) (brainwire.AgentEvent, error) {
	d.err = err
	return brainwire.AgentEvent{}, err
}

func (d *Decoder) event(kind brainwire.AgentEventKind) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: kind, ThreadID: d.sessionID, RunID: d.invoID}
}

// partial maps a streamed chunk. The common case, one text part, is
// returned without queueing.
func (d *Decoder) partial(ev *Event) (brainwire.AgentEvent, bool) {
	if len(ev.Parts) == 1 {
		p := ev.Parts[0]
		if p.Text == "" {
			return brainwire.AgentEvent{}, false
		}
		d.streamed[textKind(p.Thought)] += len(p.Text)
		return brainwire.AgentEvent{Kind: brainwire.AgentTextChunk, ThreadID: d.sessionID, RunID: d.invoID, Text: p.Text}, true
	}
	for _, p := range ev.Parts {
		if p.Text != "" {
			d.streamed[textKind(p.Thought)] += len(p.Text)
			out := d.event(brainwire.AgentTextChunk)
			out.Text = p.Text
			d.queue = append(d.queue, out)
		}
	}
	return brainwire.AgentEvent{}, false
}

// aggregated maps a model call's closing event.
func (d *Decoder) aggregated(ev *Event) error {
	var seen [2]int
	for _, p := range ev.Parts {
		if p.Text == "" {
			continue
		}
		k := textKind(p.Thought)
		start := seen[k]
		seen[k] += len(p.Text)
		if seen[k] <= d.streamed[k] {
			continue
		}
		from := max(0, d.streamed[k]-start)
		for from < len(p.Text) && !utf8.RuneStart(p.Text[from]) {
			from++
		}
		if from < len(p.Text) {
			out := d.event(brainwire.AgentTextChunk)
			out.Text = p.Text[from:]
			d.queue = append(d.queue, out)
		}
	}
	d.streamed = [2]int{}

	if ev.HasUsage && !(d.hasLastUsage && ev.Usage == d.lastUsage) {
		d.lastUsage, d.hasLastUsage = ev.Usage, true
		out := d.event(brainwire.AgentUsage)
		out.Usage = brainwire.Usage{
			PromptTokens: ev.Usage.PromptTokens,
			// Thinking is output the model wrote, billed as such.
			CompletionTokens: ev.Usage.CandidatesTokens + ev.Usage.ThoughtsTokens,
			TotalTokens:      ev.Usage.TotalTokens,
		}
		d.queue = append(d.queue, out)
	}
	for _, p := range ev.Parts {
		fc := p.FunctionCall
		if fc == nil {
			continue
		}
		if !slices.Contains(ev.LongRunningToolIDs, fc.ID) {
			if d.clientTools[fc.Name] {
				return &upstreamError{
					Msg: fmt.Sprintf("the agent ran %s itself instead of handing it over: declare it as a long-running tool", fc.Name),
					Err: fmt.Errorf("session %s: the agent called %s (%s) as a tool it runs itself, not a long-running one", d.sessionID, fc.Name, fc.ID),
				}
			}
			continue
		}
		args := fc.Args
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		call := brainwire.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: args, ThreadID: d.sessionID, RunID: d.invoID}
		d.pending++
		out := d.event(brainwire.AgentToolCall)
		out.Tool = call
		d.queue = append(d.queue, out)
	}
	if ev.ErrorCode != "" && d.pending == 0 {
		d.failed = true
		out := d.event(brainwire.AgentRunStatus)
		out.Status = brainwire.RunFailed
		out.ErrorCode, out.ErrorMessage = ev.ErrorCode, ev.ErrorMessage
		if out.ErrorMessage == "" {
			out.ErrorMessage = "the model call ended with " + ev.ErrorCode
		}
		d.queue = append(d.queue, out)
	}
	return nil
}

func textKind(thought bool) int {
	if thought {
		return 0
	}
	return 1
}
