// Package transcription turns speech into text with the Azure OpenAI audio
// transcription REST API (Whisper or gpt-4o-transcribe deployments):
//
//	POST {endpoint}/openai/deployments/{deployment}/audio/transcriptions?api-version=...
//
// with a multipart/form-data body. Audio the service would refuse (too
// large, an unsupported format) is rejected before anything is sent.
package transcription

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire"
)

// DefaultAPIVersion is the latest generally available dated version of the
// Azure OpenAI inference API.
const DefaultAPIVersion = "2024-10-21"

// TokenScope is the scope of Microsoft Entra ID tokens for Azure OpenAI.
const TokenScope = "https://cognitiveservices.azure.com/.default"

// maxAnswerSize bounds how much of an answer is read: hours of speech are
// well under it.
const maxAnswerSize = 4 << 20

// OpTranscribe names the upload on its request's context
// (brainwire.Operation): telemetry counts its retries under it.
const OpTranscribe = "transcribe"

// Service is the service the upload calls, as telemetry names a provider
// (gen_ai.provider.name).
const Service = "azure.ai.openai"

// Config says which deployment to call and how.
type Config struct {
	// Endpoint is the resource's endpoint, e.g.
	// https://<resource>.openai.azure.com.
	Endpoint string
	// Deployment is the name of the transcription model's deployment.
	Deployment string
	// APIVersion is sent as api-version; empty means DefaultAPIVersion.
	APIVersion string

	// APIKey is sent in the api-key header. Without one, TokenCredential
	// supplies Microsoft Entra ID bearer tokens.
	APIKey          string
	TokenCredential azcore.TokenCredential

	// Language is the spoken language in ISO-639-1 (e.g. "en"); optional,
	// it improves accuracy and latency.
	Language string
	// Prompt guides the model's spelling and style; optional.
	Prompt string
	// MaxConcurrent bounds the transcriptions in flight: each holds a
	// connection to the service and, unless its audio is a
	// brainwire.AudioBlob (streamed), the audio (up to 25 MB) in memory.
	// Further calls wait for a slot, as long as their context allows.
	// DefaultMaxConcurrent when 0.
	MaxConcurrent int
}

// DefaultMaxConcurrent is Config.MaxConcurrent's default: at most 100 MB
// of audio in memory when none of it is streamed.
const DefaultMaxConcurrent = 4

// Client is a brainwire.Transcriber. It is safe for concurrent use.
type Client struct {
	http     *http.Client
	url      string
	apiKey   string
	cred     azcore.TokenCredential
	language string
	prompt   string
	slots    chan struct{} // one per transcription in flight
}

var _ brainwire.Transcriber = (*Client)(nil)

// New returns a Client sending its requests with hc (nil means
// http.DefaultClient). It makes no request.
func New(cfg Config, hc *http.Client) (*Client, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("transcription: endpoint %q is not an http(s) URL without a query", cfg.Endpoint)
	}
	if cfg.Deployment == "" || strings.ContainsAny(cfg.Deployment, "/?#") {
		return nil, fmt.Errorf("transcription: invalid deployment name %q", cfg.Deployment)
	}
	switch {
	case cfg.APIKey != "" && cfg.TokenCredential != nil:
		return nil, errors.New("transcription: both an API key and a token credential are configured; choose one")
	case cfg.APIKey == "" && cfg.TokenCredential == nil:
		return nil, errors.New("transcription: no credential configured (API key or token credential)")
	}
	version := cfg.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/openai/deployments/" + cfg.Deployment + "/audio/transcriptions"
	u.RawPath = ""
	u.RawQuery = url.Values{"api-version": {version}}.Encode()
	return &Client{
		http:     hc,
		url:      u.String(),
		apiKey:   cfg.APIKey,
		cred:     cfg.TokenCredential,
		language: cfg.Language,
		prompt:   cfg.Prompt,
		slots:    make(chan struct{}, cmp.Or(max(cfg.MaxConcurrent, 0), DefaultMaxConcurrent)),
	}, nil
}

// Transcribe returns the text spoken in audio. filename and contentType
// describe the audio as it was uploaded; either is enough to tell its
// format (brainwire.AudioFormat). Audio that is empty, over
// brainwire.MaxAudioBytes or not in a supported format is an EInvalid error
// and is not sent; so is audio the service cannot decode. Failures of the service or its credentials are EUpstream
// errors, with the service's answer in an *APIError.
func (c *Client) Transcribe(ctx context.Context, audio io.Reader, filename, contentType string) (string, error) {
	filename, contentType, err := brainwire.AudioFormat(filename, contentType)
	if err != nil {
		return "", err
	}
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return "", fmt.Errorf("transcription: waiting for a turn: %w: %w",
			brainwire.Errorf(brainwire.EUpstream, "the transcription service did not answer in time"), ctx.Err())
	}
	body, err := c.body(ctx, audio, filename, contentType)
	if err != nil {
		return "", err
	}
	// The client may still read a body after Do returns; the audio is
	// its caller's to close once Transcribe returns, so it is let go first.
	first := body.open()
	defer first.Close()
	// Named, so that what sends it again (and counts it) can say what it was.
	req, err := http.NewRequestWithContext(brainwire.WithOperation(ctx, brainwire.Operation{Name: OpTranscribe, Service: Service}), http.MethodPost, c.url, first)
	if err != nil {
		return "", fmt.Errorf("transcription: building the request: %w", err)
	}
	req.ContentLength = body.size
	req.GetBody = body.reopen
	req.Header.Set("Content-Type", body.formType)
	req.Header.Set("Accept", "application/json")
	if err := c.authorize(ctx, req); err != nil {
		return "", err
	}

	resp, err := c.http.Do(req)
	if err != nil {
		app := brainwire.Errorf(brainwire.EUnavailable, "the transcription service could not be reached")
		if errors.Is(err, context.DeadlineExceeded) {
			app = brainwire.Errorf(brainwire.EUpstream, "the transcription service did not answer in time")
		}
		return "", fmt.Errorf("transcription: %w: %w", app, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", newAPIError(resp)
	}

	var answer struct {
		Text *string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerSize)).Decode(&answer); err != nil {
		return "", fmt.Errorf("transcription: decoding the answer: %w: %w",
			brainwire.Errorf(brainwire.EUpstream, "the transcription service answered with malformed JSON"), err)
	}
	if answer.Text == nil {
		return "", brainwire.Errorf(brainwire.EUpstream, "the transcription service's answer has no text")
	}
	return strings.TrimSpace(*answer.Text), nil
}

// form is a request's multipart body: the fields and the file part's
// header, the audio, then the closing boundary. The audio is streamed,
// never copied into the form.
type form struct {
	prefix, suffix []byte
	size           int64 // of the whole body
	formType       string
	first          io.Reader                     // the audio as it came
	again          func() (io.ReadCloser, error) // the audio from the start
}

// body makes the form for audio. An AudioBlob is sent as it is read, and
// read again from its blob store when the request must be sent again;
// other readers are read whole first (at most brainwire.MaxAudioBytes):
// the size must be known before sending.
func (c *Client) body(ctx context.Context, audio io.Reader, filename, contentType string) (*form, error) {
	var size int64
	var again func() (io.ReadCloser, error)
	if blob, ok := audio.(brainwire.AudioBlob); ok && blob.Size() >= 0 {
		size, again = blob.Size(), blob.Reopen
		audio = io.LimitReader(blob, size)
	} else {
		data, err := io.ReadAll(io.LimitReader(audio, brainwire.MaxAudioBytes+1))
		if err != nil {
			return nil, fmt.Errorf("transcription: reading the audio: %w", err)
		}
		size, audio = int64(len(data)), bytes.NewReader(data)
		again = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	if size == 0 {
		return nil, brainwire.Errorf(brainwire.EInvalid, "the audio is empty")
	}
	if size > brainwire.MaxAudioBytes {
		return nil, brainwire.Errorf(brainwire.EInvalid, "the audio is over the transcription limit of %d MB", brainwire.MaxAudioBytes>>20)
	}
	var head bytes.Buffer
	w := multipart.NewWriter(&head)
	// Writes to a bytes.Buffer cannot fail.
	_ = w.WriteField("response_format", "json")
	if c.language != "" {
		_ = w.WriteField("language", c.language)
	}
	if c.prompt != "" {
		_ = w.WriteField("prompt", c.prompt)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(filename)))
	h.Set("Content-Type", contentType)
	_, _ = w.CreatePart(h)
	f := &form{prefix: bytes.Clone(head.Bytes()), first: audio, again: again, formType: w.FormDataContentType()}
	head.Reset()
	_ = w.Close()
	f.suffix = head.Bytes()
	f.size = int64(len(f.prefix)) + size + int64(len(f.suffix))
	return f, nil
}

// open is the body of the first request, over the audio as it came.
// Closing it stops reading the audio, which stays open: it is closed by
// whoever opened it.
func (f *form) open() io.ReadCloser {
	return &guarded{r: io.MultiReader(bytes.NewReader(f.prefix), f.first, bytes.NewReader(f.suffix))}
}

// reopen is the body once more, over the audio read again from the start;
// closing it closes what was opened.
func (f *form) reopen() (io.ReadCloser, error) {
	rc, err := f.again()
	if err != nil {
		return nil, fmt.Errorf("transcription: reading the audio again: %w", err)
	}
	size := f.size - int64(len(f.prefix)) - int64(len(f.suffix))
	return &guarded{r: io.MultiReader(bytes.NewReader(f.prefix), io.LimitReader(rc, size), bytes.NewReader(f.suffix)), c: rc}, nil
}

// guarded is a request body the HTTP client may read and close from
// different goroutines, even after Do returned: Close waits for a read
// under way, and no read follows it.
type guarded struct {
	mu     sync.Mutex
	r      io.Reader
	c      io.Closer // nil: nothing to close
	closed bool
}

func (g *guarded) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, errors.New("transcription: request body read after it was closed")
	}
	return g.r.Read(p)
}

func (g *guarded) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.c != nil {
		return g.c.Close()
	}
	return nil
}

var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")

func (c *Client) authorize(ctx context.Context, req *http.Request) error {
	if c.apiKey != "" {
		req.Header.Set("api-key", c.apiKey)
		return nil
	}
	tok, err := c.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{TokenScope}})
	if err != nil {
		return fmt.Errorf("transcription: getting a token: %w: %w",
			brainwire.Errorf(brainwire.EUpstreamAuth, "brainwire could not sign in to the transcription service"), err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	return nil
}

// Kind names the backend in health reports.
func (c *Client) Kind() string { return "azure_openai" }
