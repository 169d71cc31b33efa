package responses

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/drain"
	"github.com/brainwire/brainwire/responses/responseswire"
)

// AgentsAPIVersion is the api-version of the Foundry agents data-plane
// operations (GET /agents/{name}); the OpenAI-style operations take none.
const AgentsAPIVersion = "v1"

// ProjectAPIVersion is the api-version of the Foundry project operations
// (GET /deployments/{name}).
const ProjectAPIVersion = "v1"

// ProjectBaseURL returns the Responses API base URL of a Foundry project
// endpoint (https://<resource>.services.ai.azure.com/api/projects/<project>):
// {project}/openai/v1.
func ProjectBaseURL(project string) string {
	u, err := url.Parse(project)
	if err != nil {
		return strings.TrimRight(project, "/") + "/openai/v1"
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/openai/v1"
	u.RawPath = ""
	return u.String()
}

// Client calls the Responses API (and the conversations and agents
// operations beside it) of one endpoint. It is safe for concurrent use.
type Client struct {
	project string // the Foundry project endpoint, for the agents API; "" elsewhere
	api     agenthttp.Client
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithProject names the Foundry project endpoint the base URL belongs to,
// which the agents operations (GetAgent) are called on.
func WithProject(endpoint string) ClientOption {
	return func(c *Client) { c.project = strings.TrimRight(endpoint, "/") }
}

// NewClient returns a client for the Responses API at baseURL: a Foundry
// project's {project}/openai/v1 (see ProjectBaseURL), Azure OpenAI's
// https://<resource>.openai.azure.com/openai/v1, https://api.openai.com/v1,
// or any server implementing the API. A query in baseURL (such as
// api-version=preview) is sent with every call. Requests go through hc,
// whose transport is expected to add authorization; nil means
// http.DefaultClient. Responses stream for as long as the model works,
// so hc should have no overall Timeout: bound calls with their context.
func NewClient(baseURL string, hc *http.Client, opts ...ClientOption) (*Client, error) {
	u, err := agenthttp.ParseBase(baseURL, "Responses API base URL")
	if err != nil {
		return nil, err
	}
	c := &Client{api: agenthttp.Client{HTTP: hc, Who: "the agent service", Service: "responses",
		Prefix: agenthttp.Prefix(u), Query: u.RawQuery}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Operations of the Responses API, as the client names them on each
// request's context (brainwire.Operation), so that client spans say what
// each call was.
const (
	OpCreateResponse     = "create_response"
	OpCreateConversation = "create_conversation"
	OpGetResponse        = "get_response"
	OpGetAgent           = "get_agent"
	OpGetModel           = "get_model"
	OpListModels         = "list_models"
	OpGetDeployment      = "get_deployment"
	// OpListConversationItems looks up a response whose answer was lost.
	OpListConversationItems = "list_conversation_items"
)

// Stream is a streamed response. Read it with Next until io.EOF or an
// error, and always Close it: closing it before its end is how a
// foreground response is stopped.
type Stream struct {
	*Decoder
	body io.ReadCloser
	end  *drain.Mark
}

// Close releases the response. Once the stream's end was read, the
// transport reads what is left of the body (drain), so that its
// connection goes back to the pool.
func (s *Stream) Close() error {
	if s.Decoder.terminal || s.Decoder.events.Err() == io.EOF {
		s.end.End()
	}
	return s.body.Close()
}

// CreateResponse creates a response and streams it (POST /responses with
// stream: true).
func (c *Client) CreateResponse(ctx context.Context, req CreateResponseRequest) (*Stream, error) {
	req.Stream = true
	rop := brainwire.Operation{Name: OpCreateResponse, ThreadID: req.Conversation, RunID: req.PreviousResponseID}
	if conv, input := req.Conversation, req.Input; conv != "" && len(input) > 0 {
		// What the response adds to the conversation tells whether it
		// was created. Chained by previous_response_id there is nothing
		// to look in: the Idempotency-Key is all a lost answer has.
		rop.Took = func(ctx context.Context) (bool, error) { return c.tookInput(ctx, conv, input) }
	}
	ctx = brainwire.WithOperation(ctx, rop)
	s, err := c.stream(ctx, c.api.URL("responses"), req)
	if err != nil {
		return nil, fmt.Errorf("creating a response: %w", err)
	}
	s.SetConversation(req.Conversation)
	return s, nil
}

// CreateConversation creates an empty conversation (POST /conversations)
// and returns its id.
func (c *Client) CreateConversation(ctx context.Context) (string, error) {
	var conv struct {
		ID string `json:"id"`
	}
	if err := c.api.Do(agenthttp.Op(ctx, OpCreateConversation, "", ""), http.MethodPost, c.api.URL("conversations"), struct{}{}, &conv); err != nil {
		return "", fmt.Errorf("creating a conversation: %w", err)
	}
	if conv.ID == "" {
		return "", &upstreamError{Msg: "the agent service created a conversation without an id",
			Err: errors.New("creating a conversation: the answer has no id")}
	}
	return conv.ID, nil
}

// GetResponse fetches a stored response (GET /responses/{id}).
func (c *Client) GetResponse(ctx context.Context, id string) (Response, error) {
	var r Response
	if err := c.api.Do(agenthttp.Op(ctx, OpGetResponse, "", id), http.MethodGet, c.api.URL("responses", id), nil, &r); err != nil {
		return Response{}, fmt.Errorf("getting response %s: %w", id, err)
	}
	return r, nil
}

// GetModel fetches a model (GET /models/{model}): a cheap call that
// proves the endpoint, the credentials and the model. An unknown model
// reads as ENotFound.
func (c *Client) GetModel(ctx context.Context, model string) (responseswire.Model, error) {
	var m responseswire.Model
	if err := c.api.Do(agenthttp.Op(ctx, OpGetModel, "", ""), http.MethodGet, c.api.URL("models", model), nil, &m); err != nil {
		return responseswire.Model{}, fmt.Errorf("getting model %s: %w", model, agenterr.NotFound(err, "the agent service has no model "+model))
	}
	return m, nil
}

// ListModels lists the endpoint's models (GET /models): a cheap call that
// proves the endpoint and the credentials, and no more.
func (c *Client) ListModels(ctx context.Context) error {
	var list struct {
		Data []struct{} `json:"data"`
	}
	if err := c.api.Do(agenthttp.Op(ctx, OpListModels, "", ""), http.MethodGet, c.api.URL("models"), nil, &list); err != nil {
		return fmt.Errorf("listing models: %w", err)
	}
	return nil
}

// GetDeployment fetches a model deployment of the Foundry project (GET
// {project}/deployments/{name}): a cheap call that proves the endpoint,
// the credentials and the deployment. The client must have been given the
// project (WithProject). An unknown deployment reads as ENotFound.
func (c *Client) GetDeployment(ctx context.Context, name string) (Deployment, error) {
	if c.project == "" {
		return Deployment{}, errors.New("getting a deployment: no Foundry project endpoint configured")
	}
	var d Deployment
	u := agenthttp.JoinURL(c.project, "api-version="+ProjectAPIVersion, "deployments", name)
	if err := c.api.Do(agenthttp.Op(ctx, OpGetDeployment, "", ""), http.MethodGet, u, nil, &d); err != nil {
		return Deployment{}, fmt.Errorf("getting deployment %s: %w", name, agenterr.NotFound(err, "the Foundry project has no deployment "+name))
	}
	return d, nil
}

// GetAgent fetches a Foundry agent (GET {project}/agents/{name}), or one
// of its versions (GET {project}/agents/{name}/versions/{version}). The
// client must have been given the project (WithProject).
func (c *Client) GetAgent(ctx context.Context, name, version string) (FoundryAgent, error) {
	if c.project == "" {
		return FoundryAgent{}, errors.New("getting an agent: no Foundry project endpoint configured")
	}
	segs := []string{"agents", name}
	if version != "" {
		segs = append(segs, "versions", version)
	}
	var a FoundryAgent
	u := agenthttp.JoinURL(c.project, "api-version="+AgentsAPIVersion, segs...)
	if err := c.api.Do(agenthttp.Op(ctx, OpGetAgent, "", ""), http.MethodGet, u, nil, &a); err != nil {
		return FoundryAgent{}, fmt.Errorf("getting agent %s: %w", name, agenterr.NotFound(err, "the Foundry project has no agent "+name))
	}
	return a, nil
}

// stream POSTs body and returns the event stream of a 2xx answer.
func (c *Client) stream(ctx context.Context, url string, body any) (*Stream, error) {
	ctx, end := drain.WithMark(ctx)
	rc, err := c.api.Stream(ctx, url, body)
	if err != nil {
		return nil, err
	}
	return &Stream{Decoder: NewDecoder(rc), body: rc, end: end}, nil
}

// APIError is a non-2xx answer of the service. It carries the brainwire
// code EUpstream: errors.As(err, new(*brainwire.Error)) succeeds on it.
type APIError = agenterr.APIError

// upstreamError marks a failure of the agent service with the brainwire
// code EUpstream and a message fit for people, keeping the cause.
type upstreamError = agenterr.Error
