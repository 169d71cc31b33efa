package foundry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/drain"
	"github.com/brainwire/brainwire/internal/retry"
)

// DefaultAPIVersion is the api-version of the stable SDKs.
const DefaultAPIVersion = "v1"

// Client calls the Foundry Agent Service threads/runs API of one project.
// It is safe for concurrent use.
type Client struct {
	api agenthttp.Client // its query holds the api-version
}

// ClientOption configures a Client: it sets the query sent with every
// call.
type ClientOption func(query url.Values)

// WithAPIVersion sets the api-version query parameter sent with every call
// (for example "2025-05-15-preview"); empty keeps DefaultAPIVersion.
func WithAPIVersion(v string) ClientOption {
	return func(q url.Values) {
		if v != "" {
			q.Set("api-version", v)
		}
	}
}

// NewClient returns a client for the project endpoint
// https://<resource>.services.ai.azure.com/api/projects/<project>.
// Requests go through hc, whose transport is expected to add authorization
// (see NewTokenTransport); nil means http.DefaultClient. Runs stream for as
// long as the agent works, so hc should have no overall Timeout: bound
// calls with their context instead.
func NewClient(endpoint string, hc *http.Client, opts ...ClientOption) (*Client, error) {
	u, err := agenthttp.ParseBase(endpoint, "project endpoint")
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("api-version", DefaultAPIVersion)
	for _, o := range opts {
		o(q)
	}
	return &Client{api: agenthttp.Client{HTTP: hc, Who: "the agent service", Service: "foundry",
		Prefix: agenthttp.Prefix(u), Query: q.Encode()}}, nil
}

// Message is a message to add to a thread.
type Message struct {
	Role    string `json:"role"` // "user" or "assistant"
	Content string `json:"content"`
	// Metadata is the message's key-value pairs.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// MetadataCall is the metadata key a message or run created on an
// existing thread is tagged with: the value is the call's
// Idempotency-Key, so that a create whose answer was lost can be found
// on the thread instead of being sent twice.
const MetadataCall = "brainwire_call"

// lookupDepth is how many of a thread's newest messages or runs a lost
// create is looked for among: what else was added in the meantime.
const lookupDepth = 20

// UserMessage returns a message from the user.
func UserMessage(text string) Message { return Message{Role: "user", Content: text} }

// CreateThreadAndRunRequest starts a run on a new thread.
type CreateThreadAndRunRequest struct {
	AssistantID string
	Messages    []Message // the new thread's messages
	// Instructions replace the agent's instructions for this run; ""
	// keeps them.
	Instructions string
	// Tools replace the agent's tools for this run; nil keeps them.
	Tools []brainwire.ToolDefinition
}

// CreateRunRequest starts a run on an existing thread.
type CreateRunRequest struct {
	AssistantID string
	// AdditionalMessages are added to the thread before the run starts.
	AdditionalMessages []Message
	// Instructions replace the agent's instructions for this run; ""
	// keeps them.
	Instructions string
	// AdditionalInstructions are appended to the agent's instructions for
	// this run only.
	AdditionalInstructions string
	// Tools replace the agent's tools for this run; nil keeps them.
	Tools []brainwire.ToolDefinition
}

// ToolOutput answers one tool call of a run that requires action.
type ToolOutput struct {
	ToolCallID string `json:"tool_call_id"`
	Output     string `json:"output"`
}

// Stream is a streamed run response. Read it with Next until io.EOF or an
// error, and always Close it.
type Stream struct {
	*Decoder
	body io.ReadCloser
	end  *drain.Mark
}

// Close releases the response. Once the stream's end was read, the
// transport reads what is left of the body (drain), so that its
// connection goes back to the pool.
func (s *Stream) Close() error {
	// After a terminal or requires_action status only done follows.
	if st := s.Decoder.status; s.Decoder.events.Err() == io.EOF || st.Terminal() || st == brainwire.RunRequiresAction {
		s.end.End()
	}
	return s.body.Close()
}

// Wire bodies.
type (
	functionTool struct {
		Type     string       `json:"type"`
		Function functionSpec `json:"function"`
	}
	functionSpec struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	threadOptions struct {
		Messages []Message         `json:"messages,omitempty"`
		Metadata map[string]string `json:"metadata,omitempty"`
	}
	createThreadAndRunBody struct {
		AssistantID  string            `json:"assistant_id"`
		Thread       *threadOptions    `json:"thread,omitempty"`
		Instructions string            `json:"instructions,omitempty"`
		Tools        []functionTool    `json:"tools,omitempty"`
		Stream       bool              `json:"stream"`
		Metadata     map[string]string `json:"metadata,omitempty"`
	}
	createRunBody struct {
		AssistantID            string            `json:"assistant_id"`
		Instructions           string            `json:"instructions,omitempty"`
		AdditionalMessages     []Message         `json:"additional_messages,omitempty"`
		AdditionalInstructions string            `json:"additional_instructions,omitempty"`
		Tools                  []functionTool    `json:"tools,omitempty"`
		Stream                 bool              `json:"stream"`
		Metadata               map[string]string `json:"metadata,omitempty"`
	}
	submitToolOutputsBody struct {
		ToolOutputs []ToolOutput `json:"tool_outputs"`
		Stream      bool         `json:"stream"`
	}
)

func functionTools(defs []brainwire.ToolDefinition) []functionTool {
	if len(defs) == 0 {
		return nil
	}
	out := make([]functionTool, len(defs))
	for i, d := range defs {
		out[i] = functionTool{Type: "function", Function: functionSpec{Name: d.Name, Description: d.Description, Parameters: d.Parameters}}
	}
	return out
}

// CreateThreadAndRun creates a thread with the given messages and starts a
// streamed run on it (POST /threads/runs). The service takes no additional
// instructions here; use CreateThread and CreateRun for those. The thread
// and the run are tagged (MetadataCall), so that when the answer is lost
// the thread is found among the project's newest and undone
// (undoThreadRun) before the create is sent again.
func (c *Client) CreateThreadAndRun(ctx context.Context, req CreateThreadAndRunRequest) (*Stream, error) {
	key := retry.NewKey()
	tag := map[string]string{MetadataCall: key}
	body := createThreadAndRunBody{AssistantID: req.AssistantID, Instructions: req.Instructions, Tools: functionTools(req.Tools),
		Stream: true, Metadata: tag}
	rop := brainwire.Operation{Name: OpProcessThreadRun, Key: key}
	if len(req.Messages) > 0 {
		body.Thread = &threadOptions{Messages: req.Messages, Metadata: tag}
		rop.Took = func(ctx context.Context) (bool, error) { return c.undoThreadRun(ctx, key) }
	}
	s, err := c.stream(brainwire.WithOperation(ctx, rop), c.api.URL("threads", "runs"), body)
	if err != nil {
		return nil, fmt.Errorf("creating thread and run: %w", err)
	}
	return s, nil
}

// undoThreadRun looks for the thread a thread-and-run create tagged key
// made, among the project's newest threads. Found, its runs are cancelled
// and it is deleted, and the create counts as not taken: sent again, it
// starts afresh, where the lost run would otherwise have run on unheard,
// waiting for tool outputs until it expired. A run that cannot be
// cancelled is an error: the call is then not sent again.
func (c *Client) undoThreadRun(ctx context.Context, key string) (bool, error) {
	var threads []tagged
	if err := c.newest(ctx, OpListThreads, "", &threads, "threads"); err != nil {
		return false, err
	}
	i := slices.IndexFunc(threads, func(th tagged) bool { return th.Metadata[MetadataCall] == key })
	if i < 0 {
		return false, nil
	}
	th := threads[i].ID
	var runs []foundrywire.Run
	if err := c.newest(ctx, OpListRuns, th, &runs, "threads", th, "runs"); err != nil {
		return false, err
	}
	for _, r := range runs {
		if st := brainwire.RunStatus(r.Status); !st.Terminal() && st != brainwire.RunCancelling {
			if _, err := c.CancelRun(ctx, th, r.ID); err != nil {
				return false, err
			}
		}
	}
	// With its runs stopped the thread is only clutter: a service that
	// will not delete it yet (a run still cancelling) does not keep the
	// capture from going on.
	var deleted struct {
		Deleted bool `json:"deleted"`
	}
	_ = c.api.Do(agenthttp.Op(ctx, OpDeleteThread, th, ""), http.MethodDelete, c.api.URL("threads", th), nil, &deleted)
	return false, nil
}

// tagged is what a lookup reads of a listed thread, run or message.
type tagged struct {
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
}

// newest reads the lookupDepth newest entries of a list (the project's
// threads, a thread's runs or messages), named by its path segments, into
// data.
func (c *Client) newest(ctx context.Context, opName, threadID string, data any, segments ...string) error {
	list := struct {
		Data any `json:"data"`
	}{Data: data}
	u := c.api.URL(segments...) + "&order=desc&limit=" + strconv.Itoa(lookupDepth)
	if err := c.api.Do(agenthttp.Op(ctx, opName, threadID, ""), http.MethodGet, u, nil, &list); err != nil {
		return fmt.Errorf("listing %s: %w", strings.Join(segments, "/"), err)
	}
	return nil
}

// CreateRun starts a streamed run on an existing thread
// (POST /threads/{thread}/runs). The run is tagged (MetadataCall), so
// that when its answer is lost the thread's runs tell whether it was
// created.
func (c *Client) CreateRun(ctx context.Context, threadID string, req CreateRunRequest) (*Stream, error) {
	key := retry.NewKey()
	body := createRunBody{
		Metadata:               map[string]string{MetadataCall: key},
		AssistantID:            req.AssistantID,
		Instructions:           req.Instructions,
		AdditionalMessages:     req.AdditionalMessages,
		AdditionalInstructions: req.AdditionalInstructions,
		Tools:                  functionTools(req.Tools),
		Stream:                 true,
	}
	rop := brainwire.Operation{Name: OpProcessThreadRun, ThreadID: threadID, Key: key,
		Took: func(ctx context.Context) (bool, error) { return c.tookRun(ctx, threadID, key) }}
	s, err := c.stream(brainwire.WithOperation(ctx, rop), c.api.URL("threads", threadID, "runs"), body)
	if err != nil {
		return nil, fmt.Errorf("creating run on thread %s: %w", threadID, err)
	}
	s.SetRun(threadID, "")
	return s, nil
}

// SubmitToolOutputs answers the tool calls of a run that requires action
// and streams the rest of the run
// (POST /threads/{thread}/runs/{run}/submit_tool_outputs).
func (c *Client) SubmitToolOutputs(ctx context.Context, threadID, runID string, outputs []ToolOutput) (*Stream, error) {
	if outputs == nil {
		outputs = []ToolOutput{}
	}
	body := submitToolOutputsBody{ToolOutputs: outputs, Stream: true}
	sop := brainwire.Operation{Name: OpSubmitToolOutputs, ThreadID: threadID, RunID: runID,
		Took: func(ctx context.Context) (bool, error) { return c.tookOutputs(ctx, threadID, runID, outputs) }}
	s, err := c.stream(brainwire.WithOperation(ctx, sop), c.api.URL("threads", threadID, "runs", runID, "submit_tool_outputs"), body)
	if err != nil {
		return nil, fmt.Errorf("submitting tool outputs for run %s: %w", runID, err)
	}
	s.SetRun(threadID, runID)
	return s, nil
}

// tookOutputs says whether the service took tool outputs whose answer was
// lost: it did unless the run still requires action on the same calls.
func (c *Client) tookOutputs(ctx context.Context, threadID, runID string, outputs []ToolOutput) (bool, error) {
	r, err := c.GetRun(ctx, threadID, runID)
	if err != nil {
		return false, err
	}
	if r.Status != string(brainwire.RunRequiresAction) || r.RequiredAction == nil {
		return true, nil
	}
	answered := make(map[string]bool, len(outputs))
	for _, o := range outputs {
		answered[o.ToolCallID] = true
	}
	for _, call := range r.RequiredAction.SubmitToolOutputs.ToolCalls {
		if !answered[call.ID] {
			return true, nil // it asks for other calls: ours were taken
		}
	}
	return false, nil
}

// tookRun says whether a run tagged key is among the thread's newest.
func (c *Client) tookRun(ctx context.Context, threadID, key string) (bool, error) {
	var runs []tagged
	if err := c.newest(ctx, OpListRuns, threadID, &runs, "threads", threadID, "runs"); err != nil {
		return false, err
	}
	return slices.ContainsFunc(runs, func(r tagged) bool { return r.Metadata[MetadataCall] == key }), nil
}

// CreateThread creates a thread holding messages (POST /threads).
func (c *Client) CreateThread(ctx context.Context, messages []Message) (foundrywire.Thread, error) {
	var th foundrywire.Thread
	if err := c.api.Do(agenthttp.Op(ctx, OpCreateThread, "", ""), http.MethodPost, c.api.URL("threads"), threadOptions{Messages: messages}, &th); err != nil {
		return foundrywire.Thread{}, fmt.Errorf("creating thread: %w", err)
	}
	return th, nil
}

// CancelRun asks the service to cancel a run
// (POST /threads/{thread}/runs/{run}/cancel).
func (c *Client) CancelRun(ctx context.Context, threadID, runID string) (foundrywire.Run, error) {
	var r foundrywire.Run
	if err := c.api.Do(agenthttp.Op(ctx, OpCancelRun, threadID, runID), http.MethodPost, c.api.URL("threads", threadID, "runs", runID, "cancel"), nil, &r); err != nil {
		return foundrywire.Run{}, fmt.Errorf("cancelling run %s: %w", runID, err)
	}
	return r, nil
}

// GetRun fetches a run (GET /threads/{thread}/runs/{run}).
func (c *Client) GetRun(ctx context.Context, threadID, runID string) (foundrywire.Run, error) {
	var r foundrywire.Run
	if err := c.api.Do(agenthttp.Op(ctx, OpGetRun, threadID, runID), http.MethodGet, c.api.URL("threads", threadID, "runs", runID), nil, &r); err != nil {
		return foundrywire.Run{}, fmt.Errorf("getting run %s: %w", runID, err)
	}
	return r, nil
}

// Agent is the part of an agent (assistant) object the server reads.
type Agent struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	// Tools are the agent's tool definitions, as the service wrote them.
	Tools json.RawMessage `json:"tools"`
	// Metadata holds the agent's key-value pairs; "version" names its
	// instructions (see Provider.DescribeAgent).
	Metadata map[string]string `json:"metadata"`
}

// GetAgent fetches an agent (GET /assistants/{id}); on the wire agents are
// assistants. An unknown agent reads as ENotFound.
func (c *Client) GetAgent(ctx context.Context, agentID string) (Agent, error) {
	var a Agent
	if err := c.api.Do(agenthttp.Op(ctx, OpGetAgent, "", ""), http.MethodGet, c.api.URL("assistants", agentID), nil, &a); err != nil {
		return Agent{}, fmt.Errorf("getting agent %s: %w", agentID, agenterr.NotFound(err, "the agent service has no agent "+agentID))
	}
	return a, nil
}

// Operations of the threads/runs API, as the client names them on each
// request's context (brainwire.Operation), in the style of the Azure AI
// Agents SDKs' own spans.
const (
	OpProcessThreadRun  = "process_thread_run"
	OpSubmitToolOutputs = "submit_tool_outputs"
	OpCancelRun         = "cancel_run"
	OpGetRun            = "get_run"
	OpCreateThread      = "create_thread"
	OpListRuns          = "list_runs"
	OpListThreads       = "list_threads"
	OpDeleteThread      = "delete_thread"
	OpGetAgent          = "get_agent"
)

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
