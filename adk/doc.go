// Package adk is the client of an agent built with Google's Agent
// Development Kit and served by its API server (`adk api_server`), and the
// brainwire.Provider built on it.
//
// Client speaks the server's REST routes (sessions, /list-apps) and
// /run_sse; a proxy's credentials are a header set by an http.RoundTripper
// under its http.Client (agenthttp.NewHeaderTransport). Decoder turns the
// event stream (one "data:" line of camelCase Event JSON per event, read
// into adkwire.ClientEvent) into normalized brainwire events. Provider starts runs:
// the agent declares brainwire's tools as long-running tools returning
// nothing, so a call pauses the agent's run and reaches brainwire in the
// stream; the agent loop (package agent) runs it (the filing happens
// there) and the run resumes with the function's response in a new
// /run_sse call on the same session.
//
// The agent-side setup is described in docs/adk.md.
package adk
