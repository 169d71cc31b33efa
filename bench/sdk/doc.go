// Package sdk uses the official OpenAI Go SDK as a conformance oracle for
// the simulator's Responses face. It is a module of its own so that the SDK
// and its dependencies stay out of brainwire's build: run it with
// (cd bench/sdk && go test ./...).
package sdk
