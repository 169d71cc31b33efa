package agenthttp

import (
	"context"
	"net/http"

	"github.com/brainwire/brainwire/internal/agenterr"
)

// HeaderTransport is an http.RoundTripper that sets one header on every
// request and passes it on: the agent service's credential (an API key, a
// bearer token), or what a proxy in front of it wants. It is safe for
// concurrent use.
type HeaderTransport struct {
	name  string
	value func(context.Context) (string, error)
	next  http.RoundTripper
}

// NewHeaderTransport returns a transport setting name: value. next nil
// means http.DefaultTransport.
func NewHeaderTransport(name, value string, next http.RoundTripper) *HeaderTransport {
	return NewHeaderFuncTransport(name, func(context.Context) (string, error) { return value, nil }, next)
}

// NewHeaderFuncTransport returns a transport setting name to what value
// returns for each request (a token that expires); a request whose value
// fails fails with that error, read as a failure to sign in
// (agenterr.SignIn), not as an unreachable service. next nil means
// http.DefaultTransport.
func NewHeaderFuncTransport(name string, value func(context.Context) (string, error), next http.RoundTripper) *HeaderTransport {
	if next == nil {
		next = http.DefaultTransport
	}
	return &HeaderTransport{name: http.CanonicalHeaderKey(name), value: value, next: next}
}

// RoundTrip implements http.RoundTripper.
func (t *HeaderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v, err := t.value(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // RoundTrip must close the body, even on errors
		}
		return nil, agenterr.SignIn(err)
	}
	r := req.Clone(req.Context()) // a RoundTripper must not modify the request
	r.Header.Set(t.name, v)
	return t.next.RoundTrip(r)
}
