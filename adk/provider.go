package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
)

// ProviderName is what Provider.Name returns: the GenAI semantic
// conventions' gen_ai.provider.name for any Google generative AI endpoint
// (semconv v1.41.0 GenAIProviderNameGCPGenAI).
const ProviderName = "gcp.gen_ai"

// DefaultUserID owns the sessions of runs that name no user.
const DefaultUserID = "brainwire"

// InstructionsKey is the session state key that carries a run's additional
// instructions (a follow-up's): the agent's instruction reads it with the
// placeholder {brainwire_instructions?}. The API server takes no
// instructions per run, so they travel as state, set with the run's
// message.
const InstructionsKey = "brainwire_instructions"

const defaultMaxToolRounds = 16

// Provider runs an agent served by an ADK API server. brainwire runs the
// agent's tools: the agent declares them as long-running tools that
// return nothing, so that a call pauses its run and is handed over in the
// stream; the provider runs it and resumes the run with the function's
// response, in a new /run_sse call on the same session. The session plays
// the part of the conversation: a follow-up continues it.
type Provider struct {
	client        *Client
	app           string
	maxToolRounds int
}

var _ brainwire.Provider = (*Provider)(nil)

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithMaxToolRounds bounds how many times one run may hand tool calls over
// before the provider gives up on it (default 16).
func WithMaxToolRounds(n int) ProviderOption {
	return func(p *Provider) {
		if n > 0 {
			p.maxToolRounds = n
		}
	}
}

// NewProvider returns a provider running the app (the agent's directory
// name on the server) through client.
func NewProvider(client *Client, app string, opts ...ProviderOption) *Provider {
	p := &Provider{client: client, app: app, maxToolRounds: defaultMaxToolRounds}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name returns "gcp.gen_ai".
func (p *Provider) Name() string { return ProviderName }

// App returns the app the provider runs.
func (p *Provider) App() string { return p.app }

// Ping checks that the server answers and serves the app, for health
// checks.
func (p *Provider) Ping(ctx context.Context) error {
	apps, err := p.client.ListApps(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(apps, p.app) {
		return &upstreamError{
			Msg: fmt.Sprintf("the agent server does not serve the app %s", p.app),
			Err: fmt.Errorf("the ADK API server lists %q, not %s", apps, p.app),
		}
	}
	return nil
}

// Run runs the agent once over req: on a new session (or req.ThreadID,
// the session of an earlier run), it sends req.Message and yields the
// stream's events; whenever the agent hands function calls over, it runs
// them in parallel, yields one EventToolResult per call in the order of
// the calls, and resumes the run with their responses, until the agent's
// turn ends.
//
// A failure is yielded once as a zero Event with the error, and ends the
// sequence. When the sequence ends early (ctx done, the consumer stopped,
// the stream broke) the open request is closed, which stops the run on
// the server.
func (p *Provider) Run(ctx context.Context, req brainwire.RunRequest) iter.Seq2[brainwire.Event, error] {
	return func(yield func(brainwire.Event, error) bool) {
		r := &runner{p: p, req: req, yield: yield}
		if err := r.run(ctx); err != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("agent run on session %s stopped: %w", r.sessionOr(), ctx.Err())
			}
			yield(brainwire.Event{}, err)
		}
	}
}

// runner is the state of one Run.
type runner struct {
	p       *Provider
	req     brainwire.RunRequest
	yield   func(brainwire.Event, error) bool
	stopped bool // the consumer stopped iterating

	user       string
	sessionID  string
	invocation string
}

func (r *runner) emit(ev brainwire.Event) bool {
	if !r.yield(ev, nil) {
		r.stopped = true
		return false
	}
	return true
}

func (r *runner) run(ctx context.Context) error {
	r.user = r.req.UserID
	if r.user == "" {
		r.user = DefaultUserID
	}
	r.sessionID = r.req.ThreadID
	if r.sessionID == "" {
		s, err := r.p.client.CreateSession(ctx, r.p.app, r.user)
		if err != nil {
			return err
		}
		r.sessionID = s.ID
	}
	first := RunSSERequest{
		AppName: r.p.app, UserID: r.user, SessionID: r.sessionID,
		NewMessage: UserText(r.req.Message), Streaming: true,
	}
	if r.req.AdditionalInstructions != "" {
		first.StateDelta = map[string]any{InstructionsKey: r.req.AdditionalInstructions}
	}
	stream, err := r.open(ctx, first)
	if err != nil {
		return err
	}
	for round := 0; ; round++ {
		if err := r.consume(stream); err != nil || r.stopped {
			return err
		}
		calls := stream.Pending()
		switch {
		case len(calls) == 0:
			return nil // the turn ended; the stream said how
		case round >= r.p.maxToolRounds:
			return &upstreamError{
				Msg: "the agent kept asking for tools",
				Err: fmt.Errorf("session %s: the agent handed tool calls over more than %d times", r.sessionID, r.p.maxToolRounds),
			}
		}
		results := agent.CallTools(ctx, r.req.Tools, calls)
		if err := ctx.Err(); err != nil {
			return err
		}
		answers := make([]MessagePart, len(calls))
		for i, call := range calls {
			ev := brainwire.Event{Kind: brainwire.EventToolResult, ThreadID: r.sessionID, RunID: r.invocation, Tool: call, Result: results[i]}
			if !r.emit(ev) {
				return nil
			}
			answers[i] = MessagePart{FunctionResponse: &FunctionAnswer{ID: call.ID, Name: call.Name, Response: responseObject(results[i].Output)}}
		}
		// The responses alone: a message mixing them with text is refused.
		stream, err = r.open(ctx, RunSSERequest{
			AppName: r.p.app, UserID: r.user, SessionID: r.sessionID,
			NewMessage: Message{Role: "user", Parts: answers}, Streaming: true,
		})
		if err != nil {
			return err
		}
	}
}

// open starts a /run_sse call.
func (r *runner) open(ctx context.Context, req RunSSERequest) (*Stream, error) {
	s, err := r.p.client.RunSSE(ctx, req, r.invocation)
	if err != nil {
		return nil, err
	}
	if r.req.Tools != nil {
		for _, d := range r.req.Tools.Definitions() {
			s.ExpectClientTools(d.Name)
		}
	}
	return s, nil
}

// consume yields the events of one stream until it ends or the consumer
// stops.
func (r *runner) consume(s *Stream) error {
	defer s.Close()
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return nil
		}
		if id := s.InvocationID(); id != "" {
			r.invocation = id
		}
		if err != nil {
			return err // the decoder says what broke, coded EUpstream
		}
		if !r.emit(ev) {
			return nil
		}
	}
}

func (r *runner) sessionOr() string {
	if r.sessionID != "" {
		return r.sessionID
	}
	return "(not yet created)"
}

// responseObject is a tool's output as a function response, which must be
// a JSON object: brainwire's tools answer objects; anything else is
// wrapped as {"result": ...}, as ADK wraps a Python tool's other values.
func responseObject(output string) json.RawMessage {
	trimmed := strings.TrimSpace(output)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	var v any = output
	if json.Valid([]byte(trimmed)) && trimmed != "" {
		v = json.RawMessage(trimmed)
	}
	b, err := json.Marshal(map[string]any{"result": v})
	if err != nil {
		return json.RawMessage(`{"result":null}`)
	}
	return b
}
