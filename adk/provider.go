package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
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

// Provider runs an agent served by an ADK API server. brainwire runs the
// agent's tools: the agent declares them as long-running tools that
// return nothing, so that a call pauses its run and is handed over in the
// stream; once it has run, the run resumes with the function's response,
// in a new /run_sse call on the same session (Continue). The session plays
// the part of the conversation: a follow-up continues it.
type Provider struct {
	client *Client
	app    string
}

var _ brainwire.Provider = (*Provider)(nil)

// NewProvider returns a provider running the app (the agent's directory
// name on the server) through client.
func NewProvider(client *Client, app string) (*Provider, error) {
	if app == "" {
		return nil, errors.New("adk: the app name is required")
	}
	return &Provider{client: client, app: app}, nil
}

// Name returns "gcp.gen_ai".
func (p *Provider) Name() string { return ProviderName }

// Ping checks that the server answers and serves the app, for health
// checks (GET /list-apps): an app it does not list, or a 404 to the list,
// reads as ENotFound.
func (p *Provider) Ping(ctx context.Context) error {
	notServed := fmt.Sprintf("the agent server does not serve the app %s", p.app)
	apps, err := p.client.ListApps(ctx)
	if err != nil {
		return agenterr.NotFound(err, notServed)
	}
	if !slices.Contains(apps, p.app) {
		return &upstreamError{
			Code: brainwire.ENotFound,
			Msg:  notServed,
			Err:  fmt.Errorf("the ADK API server lists %q, not %s", apps, p.app),
		}
	}
	return nil
}

// Start starts a run over req: on a new session (or req.ThreadID, the
// session of an earlier run), it sends req.Message and streams the
// agent's events; Continue resumes the run with the responses of the
// function calls the agent handed over. Closing a run closes its open
// request, which stops the run on the server.
func (p *Provider) Start(ctx context.Context, req brainwire.RunRequest) (brainwire.Run, error) {
	r := &run{p: p, ctx: ctx, tools: req.Tools, user: req.UserID, sessionID: req.ThreadID}
	if r.user == "" {
		r.user = DefaultUserID
	}
	if r.sessionID == "" {
		s, err := p.client.CreateSession(ctx, p.app, r.user)
		if err != nil {
			return nil, err
		}
		r.sessionID = s.ID
	}
	first := RunSSERequest{
		AppName: p.app, UserID: r.user, SessionID: r.sessionID,
		NewMessage: UserText(req.Message), Streaming: true,
	}
	if req.AdditionalInstructions != "" {
		first.StateDelta = map[string]any{InstructionsKey: req.AdditionalInstructions}
	}
	if err := r.open(first); err != nil {
		return nil, err
	}
	return r, nil
}

// run is one run of the agent: its /run_sse calls on one session.
type run struct {
	p      *Provider
	ctx    context.Context
	tools  []brainwire.ToolDefinition
	stream *Stream // the call being read; nil between calls

	user       string
	sessionID  string
	invocation string
}

// open starts a /run_sse call.
func (r *run) open(req RunSSERequest) error {
	s, err := r.p.client.RunSSE(r.ctx, req, r.invocation)
	if err != nil {
		return err
	}
	for _, d := range r.tools {
		s.ExpectClientTools(d.Name)
	}
	r.stream = s
	return nil
}

// Next returns the next event of the call being read, and closes it at
// its end.
func (r *run) Next() (brainwire.AgentEvent, error) {
	ev, err := r.stream.Next()
	if id := r.stream.InvocationID(); id != "" {
		r.invocation = id
	}
	if err != nil {
		r.closeStream()
		return brainwire.AgentEvent{}, err // io.EOF, or what broke, coded EUpstream
	}
	return ev, nil
}

// Continue resumes the run with the function calls' responses, in a new
// /run_sse call.
func (r *run) Continue(results []brainwire.ToolResult) error {
	answers := make([]MessagePart, len(results))
	for i, res := range results {
		answers[i] = MessagePart{FunctionResponse: &FunctionAnswer{ID: res.CallID, Name: res.Name, Response: responseObject(res.Output)}}
	}
	// The responses alone: a message mixing them with text is refused.
	return r.open(RunSSERequest{
		AppName: r.p.app, UserID: r.user, SessionID: r.sessionID,
		NewMessage: Message{Role: "user", Parts: answers}, Streaming: true,
	})
}

// Close closes the open call, if any.
func (r *run) Close() { r.closeStream() }

func (r *run) closeStream() {
	if r.stream != nil {
		r.stream.Close()
		r.stream = nil
	}
}

// String names the run by its session.
func (r *run) String() string {
	if r.sessionID == "" {
		return "run on session (not yet created)"
	}
	return "run on session " + r.sessionID
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
