// Package responses is the client of the OpenAI Responses API, as a
// Foundry project (Foundry Agent Service's current API), Azure OpenAI,
// OpenAI and other servers implement it, and the brainwire.Provider built
// on it.
//
// Client speaks the REST and streaming protocol (POST /responses with
// stream: true, conversations, stored responses, Foundry agents);
// authorization is an http.RoundTripper under its http.Client
// (NewAPIKeyTransport here, or a Foundry token transport). Decoder turns a
// streamed response into normalized brainwire events. Provider
// starts runs: a run streams a response, and a response that asks for
// function calls is continued by the next, carrying their outputs. The
// agent loop (package agent) runs the calls between the two.
//
// The agent is named one of two ways: an ephemeral agent brainwire
// defines with every request (a model deployment, instructions and its
// own tool definitions), or a Foundry agent by name and version through an
// agent reference, which owns its instructions and tools.
package responses
