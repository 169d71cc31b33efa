// Package foundry is the client of Azure AI Foundry Agent Service (the
// threads/runs API) and the brainwire.Provider built on it.
//
// Client speaks the REST and streaming protocol; authorization is an
// http.RoundTripper layered under its http.Client (NewTokenTransport,
// NewStaticTokenTransport). Decoder turns a streamed response into
// normalized brainwire events. Provider starts runs: a run streams until
// it ends or requires action, and continues by submitting the outputs of
// the tools it asked for, which the agent loop (package agent) runs. A
// run abandoned while it is still going is cancelled.
package foundry
