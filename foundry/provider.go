package foundry

import (
	"context"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
	"github.com/brainwire/brainwire/internal/linger"
)

// ProviderName is what Provider.Name returns.
const ProviderName = "azure.ai.agents"

const (
	defaultMaxToolRounds = 16
	defaultCancelTimeout = 5 * time.Second
)

// Provider runs a Foundry agent: it starts a streamed run, executes the
// tools the agent asks for and submits their outputs until the run ends.
type Provider struct {
	client        *Client
	agentID       string
	maxToolRounds int
	cancelTimeout time.Duration
}

var (
	_ brainwire.Provider       = (*Provider)(nil)
	_ brainwire.AgentDescriber = (*Provider)(nil)
)

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithMaxToolRounds bounds how many times one run may ask for tools before
// the provider gives up on it (default 16).
func WithMaxToolRounds(n int) ProviderOption {
	return func(p *Provider) {
		if n > 0 {
			p.maxToolRounds = n
		}
	}
}

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
func NewProvider(client *Client, agentID string, opts ...ProviderOption) *Provider {
	p := &Provider{client: client, agentID: agentID, maxToolRounds: defaultMaxToolRounds, cancelTimeout: defaultCancelTimeout}
	for _, o := range opts {
		o(p)
	}
	return p
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

// Run runs the agent once over req. It starts a run on a new thread (or on
// req.ThreadID), yields the run's events, and whenever the run requires
// action executes the requested tools in parallel, yields one
// EventToolResult per call in the order of the calls, and submits the
// outputs, until the run reaches a terminal state.
//
// A failure is yielded once as a zero Event with the error, and ends the
// sequence. When the sequence ends early (ctx done, the consumer stopped,
// the stream broke) while the upstream run is still going, the run is
// cancelled, best effort, before Run returns. A run is cancelled by its
// id, which its stream tells: when ctx ends before that (the request that
// creates the run sent, its answer not yet read), the stream is read on,
// without yielding, until it names the run, for at most the cancel
// timeout; a run still unnamed then expires upstream.
func (p *Provider) Run(ctx context.Context, req brainwire.RunRequest) iter.Seq2[brainwire.Event, error] {
	return func(yield func(brainwire.Event, error) bool) {
		r := &runner{p: p, req: req, yield: yield}
		if err := r.run(ctx); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("agent run %s stopped: %w", r.runIDOr(nil), ctx.Err())
			}
			r.cancel(ctx)
			yield(brainwire.Event{}, err)
			return
		}
		if r.stopped {
			r.cancel(ctx)
		}
	}
}

// runner is the state of one Run.
type runner struct {
	p       *Provider
	req     brainwire.RunRequest
	yield   func(brainwire.Event, error) bool
	stopped bool // the consumer stopped iterating

	threadID string
	runID    string
	status   brainwire.RunStatus
}

// emit yields ev and reports whether to go on.
func (r *runner) emit(ev brainwire.Event) bool {
	if !r.yield(ev, nil) {
		r.stopped = true
		return false
	}
	return true
}

func (r *runner) run(ctx context.Context) error {
	stream, pending, err := r.start(ctx)
	if err != nil {
		return err
	}
	for round := 0; ; round++ {
		calls, sawError, err := r.consume(ctx, stream, pending)
		pending = nil
		if err != nil || r.stopped {
			return err
		}
		switch {
		case r.status.Terminal():
			return nil
		case r.status != brainwire.RunRequiresAction:
			if sawError {
				// The error event told the consumer what went wrong.
				r.cancel(ctx)
				return nil
			}
			return &upstreamError{
				Msg: "the agent service ended the stream before the run finished",
				Err: fmt.Errorf("stream of run %s ended while the run was %q", r.runID, r.status),
			}
		case round >= r.p.maxToolRounds:
			return &upstreamError{
				Msg: "the agent kept asking for tools",
				Err: fmt.Errorf("run %s asked for tools more than %d times", r.runID, r.p.maxToolRounds),
			}
		case len(calls) == 0:
			return &upstreamError{
				Msg: "the agent asked for an action this service cannot take",
				Err: fmt.Errorf("run %s requires action but asked for no function calls", r.runID),
			}
		}

		results := agent.CallTools(ctx, r.req.Tools, calls)
		if err := ctx.Err(); err != nil {
			return err
		}
		outputs := make([]ToolOutput, len(calls))
		for i, call := range calls {
			ev := brainwire.Event{Kind: brainwire.EventToolResult, ThreadID: r.threadID, RunID: r.runID, Tool: call, Result: results[i]}
			if !r.emit(ev) {
				return nil
			}
			outputs[i] = ToolOutput{ToolCallID: call.ID, Output: results[i].Output}
		}
		stream, err = r.p.client.SubmitToolOutputs(ctx, r.threadID, r.runID, outputs)
		if err != nil {
			return err
		}
	}
}

// start opens the run's first stream. Creating a thread and run in one
// call takes no additional instructions, so with those the thread is
// created first. The request that creates the run may outlive ctx;
// consume releases it.
func (r *runner) start(ctx context.Context) (*Stream, *linger.Linger, error) {
	var tools []brainwire.ToolDefinition
	if r.req.Tools != nil {
		tools = r.req.Tools.Definitions()
	}
	var msgs []Message
	if r.req.Message != "" {
		msgs = []Message{UserMessage(r.req.Message)}
	}
	threadID := r.req.ThreadID
	if threadID == "" && r.req.AdditionalInstructions != "" {
		th, err := r.p.client.CreateThread(ctx, msgs)
		if err != nil {
			return nil, nil, err
		}
		threadID, msgs = th.ID, nil
	}
	// No run is started for a consumer already gone.
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// The request that creates the run may have to outlive ctx: the run
	// may already exist upstream, and only its id, which the stream
	// tells, lets it be cancelled. Until then the request lingers for
	// the cancel timeout after ctx ends.
	pctx, pending := linger.New(ctx, r.p.cancelTimeout)
	pending.Hold()
	var s *Stream
	var err error
	if threadID == "" {
		s, err = r.p.client.CreateThreadAndRun(pctx, CreateThreadAndRunRequest{
			AssistantID: r.p.agentID, Messages: msgs, Instructions: r.req.Instructions, Tools: tools,
		})
	} else {
		r.threadID = threadID
		s, err = r.p.client.CreateRun(pctx, threadID, CreateRunRequest{
			AssistantID:            r.p.agentID,
			Instructions:           r.req.Instructions,
			AdditionalMessages:     msgs,
			AdditionalInstructions: r.req.AdditionalInstructions,
			Tools:                  tools,
		})
	}
	if err != nil {
		pending.Release()
		return nil, nil, err
	}
	return s, pending, nil
}

// consume yields the events of one stream until it ends or the consumer
// stops, and returns the tool calls the run asked for and whether an error
// event came. The stream is read to its end (done) so that it is whole for
// whatever records the traffic; once the run is terminal or waiting for
// tool outputs, a connection that breaks before done loses nothing.
//
// pending holds the stream's request when the stream creates the run (nil
// for a run already known). Once ctx has ended, such a stream is read on,
// without yielding, only until it names the run, so that the run can be
// cancelled; consume then returns ctx's error.
func (r *runner) consume(ctx context.Context, s *Stream, pending *linger.Linger) (calls []brainwire.ToolCall, sawError bool, err error) {
	if pending != nil {
		defer pending.Release() // after Close: the body goes first
	}
	defer s.Close()
	waiting := pending != nil // for the run's id
	for {
		ev, err := s.Next()
		if err != nil {
			if waiting && ctx.Err() != nil {
				// No id in time, or the stream ended without one: a run
				// created all the same expires upstream.
				return nil, sawError, ctx.Err()
			}
			if err == io.EOF {
				return calls, sawError, nil
			}
			if r.status.Terminal() || r.status == brainwire.RunRequiresAction {
				return calls, sawError, nil
			}
			return nil, sawError, &upstreamError{
				Msg: "the agent service's event stream broke off",
				Err: fmt.Errorf("reading events of run %s: %w", r.runIDOr(s), err),
			}
		}
		if ev.ThreadID != "" {
			r.threadID = ev.ThreadID
		}
		if ev.RunID != "" {
			r.runID = ev.RunID
		}
		switch ev.Kind {
		case brainwire.EventToolCall:
			calls = append(calls, ev.Tool)
		case brainwire.EventError:
			sawError = true
		case brainwire.EventRunStatus:
			r.status = ev.Status
		}
		if waiting {
			if r.runID != "" && r.threadID != "" {
				waiting = false
				pending.Unhold()
			}
			if ctx.Err() != nil {
				if waiting {
					continue // nobody to tell
				}
				// The decoder has read the whole run object: a run that
				// is already over (its status event not yet returned)
				// needs no cancel.
				r.status = s.Status()
				return nil, sawError, ctx.Err()
			}
		}
		if !r.emit(ev) {
			return nil, sawError, nil
		}
	}
}

// runIDOr names the run for messages: the stream's, or the last known.
func (r *runner) runIDOr(s *Stream) string {
	if s != nil && s.RunID() != "" {
		return s.RunID()
	}
	if r.runID != "" {
		return r.runID
	}
	return "(not yet created)"
}

// cancel asks the service to cancel the run if it is known and still
// going. It uses its own short deadline so that it also works when ctx is
// already done, and ignores failures: the run expires upstream anyway.
func (r *runner) cancel(ctx context.Context) {
	if r.runID == "" || r.threadID == "" || r.status.Terminal() || r.status == brainwire.RunCancelling {
		return
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), r.p.cancelTimeout)
	defer stop()
	if _, err := r.p.client.CancelRun(cctx, r.threadID, r.runID); err == nil {
		r.status = brainwire.RunCancelling
	}
}
