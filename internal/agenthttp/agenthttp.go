// Package agenthttp is the JSON over HTTP the agent provider clients
// (foundry, responses, adk) speak: requests with JSON bodies, JSON
// answers, event streams, and the service's errors; and the transport
// their calls go over (Upstream), which the program's wiring builds and
// hands each client in its http.Client.
package agenthttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/azerror"
	"github.com/brainwire/brainwire/internal/retry"
)

// MaxJSON bounds a JSON answer (a stored response with its output, a
// session with a long history).
const MaxJSON = 32 << 20

// Client sends a provider's requests.
type Client struct {
	// HTTP sends them; nil means http.DefaultClient.
	HTTP *http.Client
	// Who names the service to people ("the agent service"); Service
	// names the client in its errors ("foundry", agenterr.APIError).
	Who, Service string
	// Prefix is the scheme, host and escaped path of the service's base
	// URL, without a trailing slash; Query is sent with every call.
	Prefix, Query string
}

// ParseBase parses the base URL of a service, which must be an absolute
// http(s) URL; what names it in errors ("project endpoint"). Trailing
// slashes are dropped.
func ParseBase(raw, what string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("parsing the %s: %w", what, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an absolute http(s) URL", what, raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

// Prefix is what Client.Prefix holds for the base URL u.
func Prefix(u *url.URL) string { return u.Scheme + "://" + u.Host + u.EscapedPath() }

// URL is the URL of the operation path segments, each escaped, under the
// client's base URL.
func (c Client) URL(segments ...string) string { return JoinURL(c.Prefix, c.Query, segments...) }

// JoinURL joins path segments, each escaped, to prefix, and adds query
// when there is one.
func JoinURL(prefix, query string, segments ...string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}

// Op names the call made with ctx: the operation, and the thread and run
// it is on, when there are.
func Op(ctx context.Context, name, threadID, runID string) context.Context {
	return brainwire.WithOperation(ctx, brainwire.Operation{Name: name, ThreadID: threadID, RunID: runID})
}

func (c Client) http() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// newRequest builds a request with body, when not nil, as JSON, which it
// returns too, to be let go of once sent.
func newRequest(ctx context.Context, method, url string, body any) (*http.Request, *sentBody, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, nil, err
	}
	if body == nil {
		return req, nil, nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding request body: %w", err)
	}
	sb := &sentBody{b: b}
	req.Body, req.GetBody, req.ContentLength = &bodyReader{b: b}, sb.get, int64(len(b))
	req.Header.Set("Content-Type", "application/json")
	return req, sb, nil
}

// errBodyReleased is GetBody's answer once the body has been let go of.
var errBodyReleased = errors.New("request body already sent and released")

// sentBody is a request's JSON body, let go of once sent. A streaming
// run's request stays reachable from its response for as long as the
// stream lasts, thousands of streams at once, and its body (the agent's
// instructions among it) need not.
type sentBody struct {
	mu sync.Mutex
	b  []byte // nil once released
}

// get is the request's GetBody, which the transport calls to send the body
// again (a retried request, a redirect).
func (s *sentBody) get() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		return nil, errBodyReleased
	}
	return &bodyReader{b: s.b}, nil
}

// release lets go of the body once the answer has begun: from then on the
// transport does not send the request again. Safe on nil.
func (s *sentBody) release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.b = nil
	s.mu.Unlock()
}

// bodyReader reads a body once, dropping its bytes at the end or when
// closed; a transport may close it while another goroutine reads.
type bodyReader struct {
	mu sync.Mutex
	b  []byte
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.b) == 0 {
		r.b = nil
		return 0, io.EOF
	}
	n := copy(p, r.b)
	if r.b = r.b[n:]; len(r.b) == 0 {
		r.b = nil // not even an empty slice of the array
	}
	return n, nil
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	r.b = nil
	r.mu.Unlock()
	return nil
}

// Do sends a JSON request and decodes the JSON answer (at most MaxJSON
// bytes) into out.
func (c Client) Do(ctx context.Context, method, url string, body, out any) error {
	req, _, err := newRequest(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.readError(resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxJSON)).Decode(out); err != nil && !errors.Is(err, io.EOF) {
		return &agenterr.Error{Msg: c.Who + "'s answer was not understood", Err: fmt.Errorf("decoding response: %w", err)}
	}
	return nil
}

// readError is the error of a non-2xx answer (agenterr.ReadAPIError),
// with why the service could not tell whether it did the call, when the
// answer is the call's for that reason (retry.WithLookup).
func (c Client) readError(resp *http.Response) error {
	return retry.WithLookup(agenterr.ReadAPIError(c.Service, resp), resp)
}

// Stream POSTs body and returns the body of a 2xx event stream answer;
// the caller reads and closes it.
func (c Client) Stream(ctx context.Context, url string, body any) (io.ReadCloser, error) {
	req, sb, err := newRequest(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http().Do(req)
	sb.release()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, c.readError(resp)
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
