package brainwire

import (
	"context"
	"iter"
)

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
	// run only (`brainwire eval --instructions`).
	Instructions string
	// Tools are offered to the agent and executed locally when it asks.
	Tools ToolSet
}

// Provider runs an agent on an upstream service and owns its wire protocol
// and tool loop. Run yields normalized events until the run reaches a
// terminal state; a non-nil error is final (transport failure, non-2xx
// answer, malformed stream). When ctx ends before the run does, the provider
// cancels the upstream run before it returns.
type Provider interface {
	Name() string
	Run(ctx context.Context, req RunRequest) iter.Seq2[Event, error]
}
