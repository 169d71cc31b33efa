// Package agenthttp is the JSON over HTTP the agent provider clients
// (foundry, responses, adk) speak: requests with JSON bodies, JSON
// answers, event streams, and the service's errors.
package agenthttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/azerror"
)

// MaxJSON bounds a JSON answer (a stored response with its output, a
// session with a long history).
const MaxJSON = 32 << 20

// Client sends a provider's requests.
type Client struct {
	HTTP *http.Client
	// Who names the service to people ("the agent service").
	Who string
	// ReadError builds the error of a non-2xx answer.
	ReadError func(*http.Response) error
}

// NewRequest builds a request with body, when not nil, as JSON.
func NewRequest(ctx context.Context, method, url string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request body: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Do sends a JSON request and decodes the JSON answer (at most MaxJSON
// bytes) into out.
func (c Client) Do(ctx context.Context, method, url string, body, out any) error {
	req, err := NewRequest(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.ReadError(resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxJSON)).Decode(out); err != nil && !errors.Is(err, io.EOF) {
		return &agenterr.Error{Msg: c.Who + "'s answer was not understood", Err: fmt.Errorf("decoding response: %w", err)}
	}
	return nil
}

// Stream POSTs body and returns the body of a 2xx event stream answer;
// the caller reads and closes it.
func (c Client) Stream(ctx context.Context, url string, body any) (io.ReadCloser, error) {
	req, err := NewRequest(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, c.ReadError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "text/event-stream" {
			defer resp.Body.Close()
			snippet, _ := io.ReadAll(io.LimitReader(resp.Body, azerror.MaxBody))
			return nil, &agenterr.Error{
				Msg: c.Who + " did not answer with an event stream",
				Err: fmt.Errorf("expected an event stream, got %s: %s", mt, agenterr.BodyText(snippet)),
			}
		}
	}
	return resp.Body, nil
}
