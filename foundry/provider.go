package foundry

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/linger"
)

// ProviderName is what Provider.Name returns.
const ProviderName = "azure.ai.agents"

const defaultCancelTimeout = 5 * time.Second

// Provider runs a Foundry agent: a run streams until it ends or requires
// action, and continues with the outputs of the tools it asked for
// (Continue).
type Provider struct {
	client        *Client
	agentID       string
	cancelTimeout time.Duration
}

var (
	_ brainwire.Provider       = (*Provider)(nil)
	_ brainwire.AgentDescriber = (*Provider)(nil)
)

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithCancelTimeout bounds the best-effort cancel call sent when a run is
// abandoned, and how long an abandoned run's stream is read on for the
// run's id when it was abandoned before the id came (default 5s).
func WithCancelTimeout(d time.Duration) ProviderOption {
	return func(p *Provider) {
		if d > 0 {
			p.cancelTimeout = d
		}
	}
}

// NewProvider returns a provider running the agent agentID (its assistant
// id on the wire) through client.
func NewProvider(client *Client, agentID string, opts ...ProviderOption) (*Provider, error) {
	if agentID == "" {
		return nil, errors.New("foundry: the agent id is required")
	}
	p := &Provider{client: client, agentID: agentID, cancelTimeout: defaultCancelTimeout}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Name returns "azure.ai.agents".
func (p *Provider) Name() string { return ProviderName }

// Ping checks that the service answers and knows the agent, for health
// checks: it proves the endpoint, the credentials and the agent id.
func (p *Provider) Ping(ctx context.Context) error {
	_, err := p.client.GetAgent(ctx, p.agentID)
	return err
}

// MetadataVersion is the agent metadata key whose value, when set, is the
// agent's version: whoever deploys new instructions names them there.
const MetadataVersion = "version"

// DescribeAgent fetches the agent (GET /assistants/{id}) and describes it:
// its version is metadata["version"] when set, else the hash of its
// instructions, tool definitions and model.
func (p *Provider) DescribeAgent(ctx context.Context) (brainwire.AgentInfo, error) {
	a, err := p.client.GetAgent(ctx, p.agentID)
	if err != nil {
		return brainwire.AgentInfo{}, err
	}
	id := a.ID
	if id == "" {
		id = p.agentID
	}
	tools := a.Tools
	if string(tools) == "null" {
		tools = nil
	}
	info := brainwire.AgentInfo{Name: a.Name, ID: id, Model: a.Model, Instructions: a.Instructions, Tools: tools}
	return info.Described(a.Metadata[MetadataVersion]), nil
}

// Start starts a run over req: on a new thread (or on req.ThreadID), the
// run streams until it ends or requires action; Continue submits the
// outputs of the tools it asked for and streams the rest.
//
// Closing a run that is still going cancels it, best effort. A run is
// cancelled by its id, which its stream tells: when ctx ends before that
// (the request that creates the run sent, its answer not yet read), the
// stream is read on, without returning events, until it names the run,
// for at most the cancel timeout; a run still unnamed then expires
// upstream.
func (p *Provider) Start(ctx context.Context, req brainwire.RunRequest) (brainwire.Run, error) {
	r := &run{p: p, ctx: ctx}
	var msgs []Message
	if req.Message != "" {
		msgs = []Message{UserMessage(req.Message)}
	}
	// Creating a thread and run in one call takes no additional
	// instructions: with those, the thread is created first.
	threadID := req.ThreadID
	if threadID == "" && req.AdditionalInstructions != "" {
		th, err := p.client.CreateThread(ctx, msgs)
		if err != nil {
			return nil, err
		}
		threadID, msgs = th.ID, nil
	}
	// No run is started for a consumer already gone.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The request that creates the run may have to outlive ctx: the run
	// may already exist upstream, and only its id, which the stream
	// tells, lets it be cancelled. Until then the request lingers for
	// the cancel timeout after ctx ends.
	pctx, pending := linger.New(ctx, p.cancelTimeout)
	pending.Hold()
	var s *Stream
	var err error
	if threadID == "" {
		s, err = p.client.CreateThreadAndRun(pctx, CreateThreadAndRunRequest{
			AssistantID: p.agentID, Messages: msgs, Instructions: req.Instructions, Tools: req.Tools,
		})
	} else {
		r.threadID = threadID
		s, err = p.client.CreateRun(pctx, threadID, CreateRunRequest{
			AssistantID:            p.agentID,
			Instructions:           req.Instructions,
			AdditionalMessages:     msgs,
			AdditionalInstructions: req.AdditionalInstructions,
			Tools:                  req.Tools,
		})
	}
	if err != nil {
		pending.Release()
		return nil, err
	}
	r.stream, r.pending, r.waiting = s, pending, true
	return r, nil
}

// run is one run of the agent.
type run struct {
	p      *Provider
	ctx    context.Context
	stream *Stream // the stream being read; nil between streams
	// pending holds the request of a stream that creates the run, until
	// the stream is closed; while the stream has not named the run
	// (waiting), the request outlives ctx.
	pending *linger.Linger
	waiting bool
	// reading is a read of the stream left going when ctx ended first.
	reading chan streamRead

	threadID string
	runID    string
	status   brainwire.RunStatus
}

// Next returns the next event of the stream. The stream is read to its
// end (done), so that it is whole for whatever records the traffic, and
// closed there; once the run is terminal or waiting for tool outputs, a
// connection that breaks before done loses nothing.
//
// Once ctx has ended, Next returns its error at once, also while a stream
// that creates the run has not named it yet: Close then reads on, for the
// cancel timeout at most, to name the run and cancel it.
func (r *run) Next() (brainwire.AgentEvent, error) {
	ev, err := r.read(r.ctx.Done())
	if err != nil {
		if r.waiting && r.ctx.Err() != nil {
			return brainwire.AgentEvent{}, r.ctx.Err()
		}
		return brainwire.AgentEvent{}, r.end(err)
	}
	if r.waiting && r.runID != "" && r.threadID != "" {
		// Named: from now on the request ends with ctx.
		r.waiting = false
		r.pending.Unhold()
	}
	if err := r.ctx.Err(); err != nil && r.pending != nil {
		// The decoder has read the whole run object: a run that is
		// already over (its status event not yet returned) needs no
		// cancel.
		r.status = r.stream.Status()
		r.closeStream()
		return brainwire.AgentEvent{}, err
	}
	return ev, nil
}

// read returns the stream's next event, noting the run's ids and state.
// While the stream has not named the run, its request outlives ctx (it
// lingers), so its read is waited for only until done: a read left going
// is the next read's.
func (r *run) read(done <-chan struct{}) (brainwire.AgentEvent, error) {
	var ev brainwire.AgentEvent
	var err error
	if !r.waiting {
		ev, err = r.stream.Next()
	} else {
		if r.reading == nil {
			ch := make(chan streamRead, 1)
			s := r.stream
			go func() {
				ev, err := s.Next()
				ch <- streamRead{ev, err}
			}()
			r.reading = ch
		}
		select {
		case got := <-r.reading:
			r.reading = nil
			ev, err = got.ev, got.err
		case <-done:
			return brainwire.AgentEvent{}, r.ctx.Err()
		}
	}
	if err != nil {
		return ev, err
	}
	if ev.ThreadID != "" {
		r.threadID = ev.ThreadID
	}
	if ev.RunID != "" {
		r.runID = ev.RunID
	}
	if ev.Kind == brainwire.AgentRunStatus {
		r.status = ev.Status
	}
	return ev, nil
}

// streamRead is one read of a stream, made apart from its reader.
type streamRead struct {
	ev  brainwire.AgentEvent
	err error
}

// end closes the stream that ended in err and says why.
func (r *run) end(err error) error {
	waiting := r.waiting
	runID := r.runIDOr(r.stream)
	r.closeStream()
	switch {
	case waiting && r.ctx.Err() != nil:
		// No id in time, or the stream ended without one: a run created
		// all the same expires upstream.
		return r.ctx.Err()
	case err == io.EOF, r.status.Terminal(), r.status == brainwire.RunRequiresAction:
		return io.EOF
	}
	return agenterr.StreamFailed("events of run "+runID, err)
}

// Continue submits the tool outputs of a run that requires action and
// streams the rest of the run.
func (r *run) Continue(results []brainwire.ToolResult) error {
	outputs := make([]ToolOutput, len(results))
	for i, res := range results {
		outputs[i] = ToolOutput{ToolCallID: res.CallID, Output: res.Output}
	}
	s, err := r.p.client.SubmitToolOutputs(r.ctx, r.threadID, r.runID, outputs)
	if err != nil {
		return err
	}
	r.stream = s
	return nil
}

// Close closes the open stream, and cancels the run if it is known and
// still going. A stream that creates the run and has not named it yet is
// read on first, while its request lingers (the cancel timeout after ctx
// ended), so that the run can be named and cancelled. The cancel call has
// its own short deadline, so that it also works when ctx is already done,
// and its failures are ignored: the run expires upstream anyway.
func (r *run) Close() {
	for r.waiting && r.stream != nil && (r.runID == "" || r.threadID == "") {
		// Each read ends by the request's lingering context at the latest.
		if _, err := r.read(nil); err != nil {
			break
		}
	}
	if r.waiting && r.stream != nil {
		// The decoder has read the whole run object: a run that is
		// already over needs no cancel.
		r.status = r.stream.Status()
	}
	r.closeStream()
	if r.runID == "" || r.threadID == "" || r.status.Terminal() || r.status == brainwire.RunCancelling {
		return
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(r.ctx), r.p.cancelTimeout)
	defer stop()
	if _, err := r.p.client.CancelRun(cctx, r.threadID, r.runID); err == nil {
		r.status = brainwire.RunCancelling
	}
}

func (r *run) closeStream() {
	if r.stream == nil {
		return
	}
	r.stream.Close()
	r.stream = nil
	if r.pending != nil {
		r.pending.Release() // after Close: the body goes first
		r.pending, r.waiting = nil, false
	}
}

// String names the run by its id.
func (r *run) String() string { return "run " + r.runIDOr(nil) }

// runIDOr names the run for messages: the stream's, or the last known.
func (r *run) runIDOr(s *Stream) string {
	if s != nil && s.RunID() != "" {
		return s.RunID()
	}
	if r.runID != "" {
		return r.runID
	}
	return "(not yet created)"
}
