// Package foundry is the client of Azure AI Foundry Agent Service (the
// threads/runs API) and the brainwire.Provider built on it.
//
// Client speaks the REST and streaming protocol; authorization is an
// http.RoundTripper layered under its http.Client (NewTokenTransport,
// NewStaticTokenTransport). Decoder turns a streamed response into
// normalized brainwire events. Provider owns the tool loop: start a run,
// execute the tools the agent asks for, submit their outputs, and continue
// until the run ends.
package foundry
