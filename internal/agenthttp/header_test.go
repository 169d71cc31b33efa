package agenthttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenthttp"
)

// roundTripFunc is a transport made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHeaderTransportSetsItsHeaderOnACopy(t *testing.T) {
	var sent http.Header
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.Header
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://agent.example/", nil)
	req.Header.Set("X-Api-Key", "stale")
	if _, err := agenthttp.NewHeaderTransport("x-api-key", "k-1", next).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got := sent.Values("X-Api-Key"); len(got) != 1 || got[0] != "k-1" {
		t.Errorf("sent %q", got)
	}
	if got := req.Header.Get("X-Api-Key"); got != "stale" {
		t.Errorf("the caller's request was changed: %q", got)
	}
}

// closeRecorder is a request body that says whether it was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestHeaderTransportFailsWithItsValue(t *testing.T) {
	errNoToken := errors.New("no token")
	called := false
	next := roundTripFunc(func(*http.Request) (*http.Response, error) { called = true; return nil, nil })
	rt := agenthttp.NewHeaderFuncTransport("Authorization", func(context.Context) (string, error) { return "", errNoToken }, next)
	body := &closeRecorder{Reader: strings.NewReader("{}")}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://agent.example/", body)
	_, err := rt.RoundTrip(req)
	if !errors.Is(err, errNoToken) {
		t.Fatalf("error %v", err)
	}
	// A credential that cannot be had is a failed sign-in, not an
	// unreachable service.
	if code := brainwire.ErrorCode(err); code != brainwire.EUpstreamAuth {
		t.Errorf("code %q, want %q", code, brainwire.EUpstreamAuth)
	}
	if called || !body.closed {
		t.Errorf("sent %v, body closed %v", called, body.closed)
	}
}
