// Package agent runs an agent: the one loop, shared by every provider,
// that reads a run's responses (brainwire.Run), runs the tools a response
// asks for (CallTools), yields their results and continues the run with
// them, round after round, until a response ends the run.
//
// A provider speaks its service's wire only (its client, its stream
// decoder, how a run continues). What is the same for every service lives
// here: the tool rounds and their limit, the order of events (a tool's
// result goes out before the run continues, so that the phone hears the
// outcome while the agent still writes), and what a run that stopped or
// ended early reports. A call that opens a response (the run's start, each
// continuation) and is refused before the service answered is retried
// below the provider, in its HTTP transport (internal/retry, stacked by
// package wiring), where the retry can see the status and Retry-After.
package agent
