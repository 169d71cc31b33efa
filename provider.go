package brainwire

import "context"

// RunRequest asks a provider to run the agent once over a capture.
type RunRequest struct {
	// UserID is the capture's user, for agent services that keep
	// conversations per user.
	UserID string
	// ThreadID continues an existing upstream thread (follow-up); empty
	// creates a new thread.
	ThreadID string
	// Message is the user message added to the thread for this run.
	Message string
	// AdditionalInstructions are appended to the agent's instructions for
	// this run only.
	AdditionalInstructions string
	// Instructions, when set, replace the agent's instructions for this
	// run only (`brainwire eval -instructions`).
	Instructions string
	// Tools are the tools offered to the agent, as it is told of them;
	// the agent loop runs them when it asks.
	Tools []ToolDefinition
}

// Provider starts agent runs on an upstream service. It speaks that
// service's wire only (requests, the stream decoder, how a run continues):
// the agent loop (package agent) drives each run, running the tools the
// agent asks for between its responses.
type Provider interface {
	Name() string
	// Start starts a run over req and returns it, streaming its first
	// response. The run belongs to ctx: once ctx ends, the run's calls
	// fail.
	Start(ctx context.Context, req RunRequest) (Run, error)
}

// Run is one agent run on an upstream service, read one response (or
// stream) at a time. A response that waits for tool results ends with an
// AgentRunStatus of RunRequiresAction, after the AgentToolCall of each
// call; any other response ends the run. Not safe for concurrent use.
type Run interface {
	// Next returns the next event of the response being streamed, and
	// io.EOF at its end. Any other error is final (transport failure,
	// non-2xx answer, malformed stream).
	Next() (AgentEvent, error)
	// Continue answers the calls the last response asked for with their
	// results, in the order of the calls, and streams the next response.
	Continue(results []ToolResult) error
	// Close ends the run: an open stream is closed, and a run still going
	// upstream is stopped (best effort). It is called once, however the
	// run ended.
	Close()
	// String names the run in messages, by its upstream ids as far as
	// they are known ("response resp_1", "run run_1").
	String() string
}
