package brainwire

import "context"

// ReasoningSink consumes the agent's chain-of-thought as it arrives.
// ReasoningChunk is called on the capture's hot path: implementations must
// return quickly and never block on I/O.
type ReasoningSink interface {
	ReasoningChunk(ctx context.Context, c ReasoningChunk)
}
