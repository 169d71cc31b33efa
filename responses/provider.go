package responses

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
)

// Provider names for telemetry (gen_ai.provider.name) and health checks.
const (
	// ProviderNameFoundry is a Foundry project's Responses API: Foundry Agent
	// Service, as the threads/runs provider also names it.
	ProviderNameFoundry = "azure.ai.agents"
	// ProviderNameAzureOpenAI is an Azure OpenAI resource.
	ProviderNameAzureOpenAI = "azure.ai.openai"
	// ProviderNameOpenAI is OpenAI, or another server implementing its API.
	ProviderNameOpenAI = "openai"
)

// Chaining is how a run's responses, and a follow-up's, continue the
// conversation.
type Chaining string

const (
	// ChainConversation keeps the conversation on the service: a new
	// capture creates one (POST /conversations) and every response names
	// it. Foundry projects and OpenAI have the Conversations API.
	ChainConversation Chaining = "conversation"
	// ChainPreviousResponse chains each response to the previous one
	// (previous_response_id), for servers without the Conversations API
	// (Azure OpenAI, most other implementations). A follow-up continues
	// from the response whose function call filed the capture.
	ChainPreviousResponse Chaining = "previous_response_id"
)

// Agent names the agent that answers, in one of two ways: an ephemeral
// agent that brainwire defines with each request (Model, Instructions and
// the capture's tools), or a Foundry agent by Name (and Version), which
// owns its instructions and tool definitions.
type Agent struct {
	Model        string
	Instructions string
	Name         string
	Version      string
}

// Provider runs an agent through the Responses API. A run streams a
// response; when it asks for function calls, the run continues with a
// response carrying their outputs (Continue). All the responses of one
// capture are one brainwire run.
//
// A streamed response in the foreground has no cancel operation (the API
// cancels only background responses): a run that is abandoned closes its
// stream, which is how the service is told to stop.
type Provider struct {
	client   *Client
	agent    Agent
	chaining Chaining
	summary  string
	name     string
}

var (
	_ brainwire.Provider       = (*Provider)(nil)
	_ brainwire.AgentDescriber = (*Provider)(nil)
)

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithChaining says how a run's responses, and a follow-up's, continue
// the conversation (ChainConversation by default).
func WithChaining(c Chaining) ProviderOption {
	return func(p *Provider) { p.chaining = c }
}

// WithReasoningSummary asks a reasoning model to stream summaries of its
// reasoning ("auto", "concise", "detailed"); without it none are asked
// for (models without reasoning refuse the request otherwise). Ephemeral
// agents only: a Foundry agent's definition says it.
func WithReasoningSummary(s string) ProviderOption {
	return func(p *Provider) { p.summary = s }
}

// WithName sets Provider.Name (gen_ai.provider.name; ProviderOpenAI by
// default).
func WithName(name string) ProviderOption {
	return func(p *Provider) { p.name = name }
}

// NewProvider returns a provider running agent through client.
func NewProvider(client *Client, agent Agent, opts ...ProviderOption) (*Provider, error) {
	p := &Provider{client: client, agent: agent, chaining: ChainConversation, name: ProviderNameOpenAI}
	for _, o := range opts {
		o(p)
	}
	switch a := agent; {
	case a.Name != "" && a.Model != "":
		return nil, errors.New("responses: name a Foundry agent or a model, not both")
	case a.Name == "" && a.Model == "":
		return nil, errors.New("responses: a Foundry agent name or a model is required")
	case a.Name != "" && a.Instructions != "":
		return nil, errors.New("responses: a Foundry agent has its own instructions")
	}
	switch p.chaining {
	case "":
		p.chaining = ChainConversation
	case ChainConversation, ChainPreviousResponse:
	default:
		return nil, fmt.Errorf("responses: unknown chaining %q (want %s or %s)", p.chaining, ChainConversation, ChainPreviousResponse)
	}
	switch p.summary {
	case "", "auto", "concise", "detailed":
	default:
		return nil, fmt.Errorf("responses: unknown reasoning summary %q (want auto, concise or detailed)", p.summary)
	}
	if p.name == "" {
		p.name = ProviderNameOpenAI
	}
	return p, nil
}

// Name returns the provider's name (gen_ai.provider.name).
func (p *Provider) Name() string { return p.name }

// Ping checks that the service answers for the agent, for health checks,
// with one cheap call that proves the endpoint, the credentials and what
// the agent is named by: a Foundry agent is fetched; an agent brainwire
// defines has its model deployment fetched from the Foundry project, the
// models of an Azure OpenAI resource listed, or its model fetched from any
// other endpoint.
func (p *Provider) Ping(ctx context.Context) error {
	a := p.agent
	var err error
	switch {
	case a.Name != "":
		_, err = p.client.GetAgent(ctx, a.Name, a.Version)
	case p.client.project != "":
		_, err = p.client.GetDeployment(ctx, a.Model)
	case p.name == ProviderNameAzureOpenAI:
		// An Azure OpenAI resource's model is a deployment's name, which
		// its data plane cannot fetch (GET /models/{id} knows the base
		// models): fetching it would call a working deployment unknown.
		// Listing the models proves the endpoint and the credentials; an
		// unknown deployment shows in the captures' 404.
		err = p.client.ListModels(ctx)
	default:
		_, err = p.client.GetModel(ctx, a.Model)
	}
	return err
}

// DescribeAgent says which agent runs the captures: an ephemeral agent is
// what brainwire sends (model, instructions, tools), known by its
// instructions' content version; a Foundry agent is fetched, and known by
// its agent version.
func (p *Provider) DescribeAgent(ctx context.Context) (brainwire.AgentInfo, error) {
	a := p.agent
	if a.Name == "" {
		// Each run sends its capture's own tools: the agent has none.
		info := brainwire.AgentInfo{Name: "Classifier", Model: a.Model, Instructions: a.Instructions, Tools: json.RawMessage("null"), Defined: true}
		return info.Described(brainwire.ContentVersion(a.Instructions)), nil
	}
	fa, err := p.client.GetAgent(ctx, a.Name, a.Version)
	if err != nil {
		return brainwire.AgentInfo{}, err
	}
	v := fa.Current()
	info := brainwire.AgentInfo{Name: a.Name, ID: a.Name, Model: v.Definition.Model, Tools: v.Definition.Tools}
	if in := v.Definition.Instructions; in != nil {
		info.Instructions = *in
	}
	version := v.Version
	if version == "" {
		version = a.Version
	}
	return info.Described(version), nil
}

// Start starts a run over req. A new capture (req.ThreadID empty) starts
// a conversation; a follow-up continues the one req.ThreadID names: a
// conversation (conv_…) or, under previous-response chaining, the
// response (resp_…) whose function call filed the capture. The run
// streams its first response.
//
// A streamed response in the foreground has no cancel operation: closing
// the run closes its stream, which is how the service is told to stop.
func (p *Provider) Start(ctx context.Context, req brainwire.RunRequest) (brainwire.Run, error) {
	r := &run{p: p, ctx: ctx, req: req}
	first, err := r.start()
	if err != nil {
		return nil, err
	}
	if err := r.open(first); err != nil {
		return nil, err
	}
	return r, nil
}

// run is one run: the responses of one capture.
type run struct {
	p      *Provider
	ctx    context.Context
	req    brainwire.RunRequest
	stream *Stream // the response being streamed; nil between responses

	conversationID string // the conversation, under conversation chaining
	responseID     string // the last response
}

// open streams the response req creates.
func (r *run) open(req CreateResponseRequest) error {
	s, err := r.p.client.CreateResponse(r.ctx, req)
	if err != nil {
		return err
	}
	r.stream = s
	return nil
}

// Next returns the next event of the response being streamed. The stream
// is read to its end, so that it is whole for whatever records the
// traffic, and closed there.
func (r *run) Next() (brainwire.AgentEvent, error) {
	ev, err := r.stream.Next()
	if err != nil {
		r.closeStream()
		if err == io.EOF {
			return brainwire.AgentEvent{}, io.EOF
		}
		return brainwire.AgentEvent{}, agenterr.StreamFailed("events of response "+r.responseIDOr(), err)
	}
	if ev.RunID != "" {
		r.responseID = ev.RunID
	}
	if ev.Kind == brainwire.AgentToolCall && ev.Tool.ThreadID == "" {
		// Without a conversation, the response that asked is where a
		// follow-up continues from.
		ev.Tool.ThreadID = ev.Tool.RunID
	}
	return ev, nil
}

// Continue streams the next response, carrying the function calls'
// outputs.
func (r *run) Continue(results []brainwire.ToolResult) error {
	input := make([]InputItem, len(results))
	for i, res := range results {
		input[i] = FunctionCallOutput(res.CallID, res.Output)
	}
	return r.open(r.request(input))
}

// Close closes the open stream, if any.
func (r *run) Close() { r.closeStream() }

func (r *run) closeStream() {
	if r.stream != nil {
		r.stream.Close()
		r.stream = nil
	}
}

// String names the run by its last response.
func (r *run) String() string { return "response " + r.responseIDOr() }

// supersededOutput answers the function calls of the response a follow-up
// continues from (previous-response chaining): brainwire answered them
// when the capture was filed, but on another branch of the chain.
const supersededOutput = `{"status":"superseded","message":"This call was answered when the capture was filed. ` +
	`The person's answer to your clarifying question follows."}`

// start returns the run's first request: for a new capture, in a new
// conversation; for a follow-up, continuing the one it names.
func (r *run) start() (CreateResponseRequest, error) {
	var input []InputItem
	msg := r.req.Message
	if extra := r.req.AdditionalInstructions; extra != "" {
		if r.p.agent.Name != "" {
			// A Foundry agent may refuse system and developer messages:
			// the run's instructions go before the person's words.
			msg = strings.TrimSpace(extra + "\n\n" + msg)
		} else {
			input = append(input, DeveloperMessage(extra))
		}
	}
	if msg != "" {
		input = append(input, UserMessage(msg))
	}

	id := r.req.ThreadID
	chaining := r.p.chaining
	switch {
	case id == "" && chaining == ChainConversation:
		conv, err := r.p.client.CreateConversation(r.ctx)
		if err != nil {
			return CreateResponseRequest{}, err
		}
		r.conversationID = conv
	case id == "":
	case strings.HasPrefix(id, "thread_"):
		return CreateResponseRequest{}, &upstreamError{
			Msg: "this capture's conversation belongs to the classic Agents API and cannot be continued here",
			Err: fmt.Errorf("conversation %s is a threads/runs thread; the Responses API cannot continue it", id),
		}
	case strings.HasPrefix(id, "resp_") || (chaining == ChainPreviousResponse && !strings.HasPrefix(id, "conv_")):
		prev, err := r.p.client.GetResponse(r.ctx, id)
		if err != nil {
			return CreateResponseRequest{}, err
		}
		var answers []InputItem
		for _, fc := range prev.FunctionCalls() {
			answers = append(answers, FunctionCallOutput(cmp.Or(fc.CallID, fc.ID), supersededOutput))
		}
		input = append(answers, input...)
		r.responseID = id
	default:
		r.conversationID = id
	}
	return r.request(input), nil
}

// request is the next request of the run: input, with the agent named as
// configured, in the run's conversation or after its last response.
func (r *run) request(input []InputItem) CreateResponseRequest {
	req := CreateResponseRequest{Input: input, Store: true}
	if input == nil {
		req.Input = []InputItem{}
	}
	if a := r.p.agent; a.Name != "" {
		req.Agent = &AgentReference{Type: "agent_reference", Name: a.Name, Version: a.Version}
	} else {
		req.Model, req.Instructions = a.Model, a.Instructions
		if r.req.Instructions != "" {
			req.Instructions = r.req.Instructions
		}
		if r.req.Tools != nil {
			req.Tools = FunctionTools(r.req.Tools)
		}
		if s := r.p.summary; s != "" {
			req.Reasoning = &Reasoning{Summary: s}
		}
	}
	if r.conversationID != "" {
		req.Conversation = r.conversationID
	} else {
		req.PreviousResponseID = r.responseID
	}
	return req
}

// responseIDOr names the response for messages.
func (r *run) responseIDOr() string {
	if r.responseID != "" {
		return r.responseID
	}
	return "(not yet created)"
}
