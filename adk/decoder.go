package adk

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/sse"
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
	events    *agenthttp.Events
	sessionID string
	invoID    string
	started   bool

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
	lastUsage    adkwire.Usage
	hasLastUsage bool
	// clientTools are tools the client runs: the agent must hand their
	// calls over rather than run them itself.
	clientTools map[string]bool
}

// NewDecoder returns a Decoder reading the event stream r.
func NewDecoder(r io.Reader) *Decoder {
	d := &Decoder{}
	d.events = agenthttp.NewEvents(r, d.event, d.end)
	return d
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
	if !d.started {
		d.started = true
		ev := d.new(brainwire.AgentRunStatus)
		ev.Status = brainwire.RunInProgress
		return ev, nil
	}
	return d.events.Next()
}

// event maps one frame. The API server frames each event as one "data:
// <JSON>" line and a blank line, with no event names, ids or end marker:
// the body's end is the end of the stream. Frames with no payload (a
// proxy's keep-alive) are skipped.
func (d *Decoder) event(dst []brainwire.AgentEvent, sev sse.Event) ([]brainwire.AgentEvent, error) {
	if len(bytes.TrimSpace(sev.Data)) == 0 {
		return dst, nil
	}
	ev, se, err := decodePayload(sev.Data)
	if err != nil {
		if d.settled() {
			return d.end(dst, io.EOF)
		}
		return dst, &upstreamError{Msg: "the agent server sent an event brainwire cannot read",
			Err: fmt.Errorf("session %s: %w", d.sessionID, err)}
	}
	if ev.InvocationID != "" {
		d.invoID = ev.InvocationID
	}
	if se != nil {
		d.frameErr, d.final = true, false
		out := d.new(brainwire.AgentError)
		out.ErrorCode, out.ErrorMessage = se.Type, se.Message
		return append(dst, out), nil
	}
	d.final = !partial(&ev) && isFinalResponse(&ev)
	if role(&ev) == "user" || partial(&ev) {
		d.hasLastUsage = false
	}
	switch {
	case role(&ev) == "user":
		return dst, nil // responses of tools the agent ran itself
	case partial(&ev):
		return d.partial(dst, &ev), nil
	}
	return d.aggregated(dst, &ev)
}

// settled reports whether the agent's turn has ended: nothing the body
// could still bring matters.
func (d *Decoder) settled() bool { return d.final || d.failed || d.frameErr }

// end finishes the body: a read error once the turn has ended loses
// nothing.
func (d *Decoder) end(dst []brainwire.AgentEvent, err error) ([]brainwire.AgentEvent, error) {
	if !d.settled() {
		if err == io.EOF {
			return dst, &upstreamError{Msg: "the agent server's event stream ended before the agent finished",
				Err: fmt.Errorf("event stream of session %s ended before the agent's turn did: %w", d.sessionID, io.ErrUnexpectedEOF)}
		}
		return dst, &upstreamError{Msg: "the agent server's event stream broke off",
			Err: fmt.Errorf("reading events of session %s: %w", d.sessionID, err)}
	}
	switch {
	case d.failed || d.frameErr:
		// The consumer was told why the turn ended.
	case d.pending > 0:
		ev := d.new(brainwire.AgentRunStatus)
		ev.Status = brainwire.RunRequiresAction
		dst = append(dst, ev)
	case d.final:
		ev := d.new(brainwire.AgentRunStatus)
		ev.Status = brainwire.RunCompleted
		dst = append(dst, ev)
	}
	return dst, io.EOF
}

func (d *Decoder) new(kind brainwire.AgentEventKind) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: kind, ThreadID: d.sessionID, RunID: d.invoID}
}

// partial maps a streamed chunk.
func (d *Decoder) partial(dst []brainwire.AgentEvent, ev *adkwire.ClientEvent) []brainwire.AgentEvent {
	for _, p := range parts(ev) {
		if p.Text != "" {
			d.streamed[textKind(p.Thought)] += len(p.Text)
			out := d.new(brainwire.AgentTextChunk)
			out.Text = p.Text
			dst = append(dst, out)
		}
	}
	return dst
}

// aggregated maps a model call's closing event.
func (d *Decoder) aggregated(dst []brainwire.AgentEvent, ev *adkwire.ClientEvent) ([]brainwire.AgentEvent, error) {
	var seen [2]int
	for _, p := range parts(ev) {
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
			out := d.new(brainwire.AgentTextChunk)
			out.Text = p.Text[from:]
			dst = append(dst, out)
		}
	}
	d.streamed = [2]int{}

	if u := ev.UsageMetadata; u != nil && !(d.hasLastUsage && *u == d.lastUsage) {
		d.lastUsage, d.hasLastUsage = *u, true
		out := d.new(brainwire.AgentUsage)
		out.Usage = brainwire.Usage{
			PromptTokens: u.PromptTokenCount,
			// Thinking is output the model wrote, billed as such.
			CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
			TotalTokens:      u.TotalTokenCount,
		}
		dst = append(dst, out)
	}
	for _, p := range parts(ev) {
		fc := p.FunctionCall
		if fc == nil {
			continue
		}
		if !slices.Contains(ev.LongRunningToolIDs, fc.ID) {
			if d.clientTools[fc.Name] {
				return dst, &upstreamError{
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
		out := d.new(brainwire.AgentToolCall)
		out.Tool = call
		dst = append(dst, out)
	}
	if ev.ErrorCode != "" && d.pending == 0 {
		d.failed = true
		out := d.new(brainwire.AgentRunStatus)
		out.Status = brainwire.RunFailed
		out.ErrorCode, out.ErrorMessage = ev.ErrorCode, ev.ErrorMessage
		if out.ErrorMessage == "" {
			out.ErrorMessage = "the model call ended with " + ev.ErrorCode
		}
		dst = append(dst, out)
	}
	return dst, nil
}

func textKind(thought bool) int {
	if thought {
		return 0
	}
	return 1
}
