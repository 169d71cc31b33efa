package adk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/agenthttp"
)

// Client calls an ADK API server (`adk api_server`): its session routes,
// /list-apps and /run_sse. It is safe for concurrent use.
type Client struct {
	api agenthttp.Client
}

// NewClient returns a client for the API server at baseURL
// (http://127.0.0.1:8000, or a proxy's URL with a path prefix). Requests
// go through hc, whose transport adds any credentials a proxy in front
// needs (agenthttp.NewHeaderTransport); nil means http.DefaultClient.
// Runs stream for as long as the agent works, so hc should have no
// overall Timeout: bound calls with their context instead.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := agenthttp.ParseBase(baseURL, "ADK API server URL")
	if err != nil {
		return nil, err
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		// They would end up in recordings and traces; credentials go in a header.
		return nil, fmt.Errorf("ADK API server URL %q: want no query, fragment or user info", baseURL)
	}
	return &Client{api: agenthttp.Client{HTTP: hc, Who: "the agent server", Service: "adk",
		Prefix: agenthttp.Prefix(u)}}, nil
}

// Session is an ADK session: one conversation of one user with one app.
type Session struct {
	ID      string `json:"id"`
	AppName string `json:"appName"`
	UserID  string `json:"userId"`
	// LastUpdateTime is in seconds since the epoch.
	LastUpdateTime float64 `json:"lastUpdateTime"`
}

// Message is the message a /run_sse call brings the agent (newMessage):
// the user's text, or the responses to the function calls the agent
// handed over, never both.
type Message struct {
	Role  string        `json:"role"`
	Parts []MessagePart `json:"parts"`
}

// MessagePart is one part of a Message.
type MessagePart struct {
	Text             string          `json:"text,omitempty"`
	FunctionResponse *FunctionAnswer `json:"functionResponse,omitempty"`
}

// FunctionAnswer answers one function call (a functionResponse part).
type FunctionAnswer struct {
	// ID is the call's id, exactly as the agent's event gave it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Response must be a JSON object.
	Response json.RawMessage `json:"response"`
}

// UserText returns a message from the user.
func UserText(text string) Message {
	return Message{Role: "user", Parts: []MessagePart{{Text: text}}}
}

// RunSSERequest is the body of POST /run_sse.
type RunSSERequest struct {
	AppName    string  `json:"appName"`
	UserID     string  `json:"userId"`
	SessionID  string  `json:"sessionId"`
	NewMessage Message `json:"newMessage"`
	// Streaming asks for partial events as the model writes; without it
	// only each model call's aggregated event comes.
	Streaming bool `json:"streaming"`
	// StateDelta is applied to the session's state with the new message.
	StateDelta map[string]any `json:"stateDelta,omitempty"`
}

// Operations of the API server, as the client names them on each
// request's context (brainwire.Operation).
const (
	OpCreateSession = "create_session"
	OpRunSSE        = "run_sse"
	OpListApps      = "list_apps"
	// OpGetSession looks up a /run_sse call whose answer was lost.
	OpGetSession = "get_session"
)

// ListApps returns the apps the server serves (GET /list-apps).
func (c *Client) ListApps(ctx context.Context) ([]string, error) {
	var apps []string
	if err := c.api.Do(brainwire.WithOperation(ctx, brainwire.Operation{Name: OpListApps}), http.MethodGet, c.api.URL("list-apps"), nil, &apps); err != nil {
		return nil, fmt.Errorf("listing apps: %w", err)
	}
	return apps, nil
}

// CreateSession creates a session of user with app, with an id the server
// chooses (POST /apps/{app}/users/{user}/sessions).
func (c *Client) CreateSession(ctx context.Context, app, user string) (Session, error) {
	var s Session
	if err := c.api.Do(agenthttp.Op(ctx, OpCreateSession, "", ""), http.MethodPost, c.api.URL("apps", app, "users", user, "sessions"), struct{}{}, &s); err != nil {
		return Session{}, fmt.Errorf("creating a session of %s with %s: %w", user, app, err)
	}
	if s.ID == "" {
		return Session{}, &upstreamError{
			Msg: "the agent server created a session without an id",
			Err: fmt.Errorf("creating a session of %s with %s: the answer has no id", user, app),
		}
	}
	return s, nil
}

// RunSSE runs the agent on a message and streams its events
// (POST /run_sse). When the answer is lost, the session tells whether the
// message was taken. invocationID names the paused run a message of function
// responses resumes, for telemetry; the server finds it by the responses'
// ids. Read the stream to its end and Close it; closing it early closes
// the request, which stops the run on the server.
func (c *Client) RunSSE(ctx context.Context, req RunSSERequest, invocationID string) (*Stream, error) {
	rop := brainwire.Operation{Name: OpRunSSE, ThreadID: req.SessionID, RunID: invocationID,
		Took: func(ctx context.Context) (bool, error) { return c.tookMessage(ctx, req) }}
	ctx, cancel := context.WithCancel(brainwire.WithOperation(ctx, rop))
	body, err := c.api.Stream(ctx, c.api.URL("run_sse"), req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("running %s on session %s: %w", req.AppName, req.SessionID, err)
	}
	d := NewDecoder(body)
	d.SetSession(req.SessionID, invocationID)
	return &Stream{Decoder: d, body: body, cancel: cancel}, nil
}

// Stream is a /run_sse response. Read it with Next until io.EOF or an
// error, and always Close it.
type Stream struct {
	*Decoder
	body   io.ReadCloser
	cancel context.CancelFunc
}

// Close releases the response; a stream not read to its end is cut off.
func (s *Stream) Close() error {
	err := s.body.Close()
	s.cancel()
	return err
}

// maxErrorText bounds the server's own message kept from an error frame.
const maxErrorText = agenterr.MaxText

// APIError is a non-2xx answer of the API server, as every provider
// reports one: Message holds the server's own words (FastAPI's detail, or
// a gateway's JSON error), Body an answer that held none. It carries the
// brainwire code EUpstream (EBusy for 429): errors.As(err,
// new(*brainwire.Error)) succeeds on it.
type APIError = agenterr.APIError

// upstreamError marks a failure of the agent server with the brainwire
// code EUpstream and a message fit for people, keeping the cause.
type upstreamError = agenterr.Error
